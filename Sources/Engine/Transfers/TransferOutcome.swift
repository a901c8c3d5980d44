import Foundation
import Queue

/// How a transfer ended, as its row is to be recorded: the row as it is to be saved, and what is told once it is.
/// Recorded by the engine's next turn, in the transaction that starts the next transfers (`EngineState`'s
/// `writeTurn`), and told only once committed.
///
/// Why not a transaction each: a transaction's cost is mostly its own (begin, commit, a page of the row and of each
/// index on its state to the WAL), and with many small files the transfers' own transactions were a tenth of the
/// host's CPU; the turn that a transfer's end wakes writes anyway (DECISIONS.md #6). What a kill between the
/// transfer's end and the commit leaves is the row still marked moving, queued again at the next start
/// (`recoverInterruptedTransfers`): a finished file is then fetched again and replaces the one already in the
/// container, which no receiver was told of.
struct TransferOutcome: Sendable {
    /// The row with its new state: finished (the file synced and in the container), failed, waiting, or queued again
    /// (a challenge answered with credentials).
    var row: QueuedDownload
    /// What the observer hears once the row is recorded, if anything.
    var event: LifecycleEvent?
    /// Whether a completion then waits to be delivered (finished or failed for good).
    var completes: Bool
    /// Where the bytes arrived, and where a finished file lies: both deleted when the row turns out to be gone.
    var partialPath: String
    var finishedPath: String
    /// What the download received beyond its declared size (an estimate's, whose app's allowance reserved that
    /// size), to charge to the allowance; nil when nothing is to be charged.
    var charge: Int64?

    /// The row queued again to be tried with new credentials, keeping where its bytes are.
    func queuedAgain(_ row: QueuedDownload) -> TransferOutcome {
        var queued = row
        queued.state = .queued
        return TransferOutcome(
            row: queued, event: nil, completes: false, partialPath: partialPath, finishedPath: finishedPath)
    }

    /// Deletes what a transfer of a cancelled download left, wherever its outcome had put the bytes.
    static func discardFiles(partialPath: String, finishedPath: String) {
        unlink(partialPath)
        unlink(finishedPath)
    }
}
