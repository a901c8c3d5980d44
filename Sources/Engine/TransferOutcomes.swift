import Foundation
import Queue
import Synchronization
import Vocabulary

/// How a transfer ended, as its row is to be recorded: the row as it is to be saved, and what is told once it is.
struct TransferOutcome: Sendable {
    /// The row with its new state: finished (the file synced and in the container), failed, or waiting.
    var row: QueuedDownload
    /// What the observer hears once the row is recorded.
    var event: LifecycleEvent
    /// Whether a completion then waits to be delivered (finished or failed for good).
    var completes: Bool
    /// Where the bytes arrived, and where a finished file lies: both deleted when the row turns out to be gone.
    var partialPath: String
    var finishedPath: String

    /// Deletes what a transfer of a cancelled download left, wherever its outcome had put the bytes.
    static func discardFiles(partialPath: String, finishedPath: String) {
        unlink(partialPath)
        unlink(finishedPath)
    }
}

/// Outcomes of transfers that ended since the engine's last turn, recorded by the next turn in the transaction that
/// starts the next transfers (`QueueStore.turn`) and told only once committed.
///
/// Why not a transaction each: a transaction's cost is mostly its own (begin, commit, a page of the row and of each
/// index on its state to the WAL), and with many small files the transfers' own transactions were a tenth of the
/// host's CPU; the turn that a transfer's end wakes writes anyway (DECISIONS.md #6). Nobody waits for it: the
/// turn runs as soon as the transfer's end wakes the engine. What a kill between the transfer's end and the commit
/// leaves is the row still marked moving, queued again at the next start (`recoverInterruptedTransfers`): a finished
/// file is then fetched again and replaces the one already in the container, which no receiver was told of.
final class TransferOutcomes: Sendable {
    private let waiting = Mutex<[TransferOutcome]>([])

    func add(_ outcome: TransferOutcome) {
        waiting.withLock { $0.append(outcome) }
    }

    /// Takes every outcome waiting, oldest first.
    func take() -> [TransferOutcome] {
        waiting.withLock { outcomes in
            defer { outcomes = [] }
            return outcomes
        }
    }

    /// After `outcomes` were committed (`gone`: those whose row was cancelled meanwhile): deletes what the gone ones
    /// left, tells the rest, hands completions to `completed`, and opens the launch gate of apps whose essential
    /// downloads have all ended.
    static func recorded(
        _ outcomes: [TransferOutcome], gone: Set<String>, context: EngineContext, completed: (String) -> Void
    ) {
        guard !outcomes.isEmpty else { return }
        var apps = Set<String>()
        for outcome in outcomes {
            let row = outcome.row
            if gone.contains(row.uniqueIdentifier) {
                TransferOutcome.discardFiles(partialPath: outcome.partialPath, finishedPath: outcome.finishedPath)
                continue
            }
            context.observe(outcome.event)
            if outcome.completes { completed(row.appIdentifier) }
            apps.insert(row.appIdentifier)
        }
        for app in apps {
            do {
                try context.announceLaunchIfReady(app)
            } catch {
                context.observe(.queueFailed("\(app): \(error)"))
            }
        }
        context.events.post(.transferEnded)
    }
}
