import ExtensionRuntime
import Queue
import Synchronization
import Transfer
import Vocabulary

/// The challenges transfers ended with, answered by the engine rather than inside a transfer: the app's delegate is
/// asked for credentials, else the extension in a window of its own; the download is then queued again with them,
/// or its 401 recorded as final by the next turn. One task per challenged download, owned here so that the engine's
/// loop counts it as work in progress (`isIdle`) and its shutdown waits for it. [any thread]
final class ChallengeAnswers: Sendable {
    private let tasks = Mutex([String: Task<Void, Never>]())

    var isIdle: Bool { tasks.withLock { $0.isEmpty } }

    /// Asks about `challenge`, then queues `row` again or hands `otherwise` to the next turn. [any thread]
    func answer(
        _ challenge: ServerChallenge, for row: QueuedDownload, otherwise: TransferOutcome, context: EngineContext
    ) {
        let uniqueIdentifier = row.uniqueIdentifier
        tasks.withLock { tasks in
            tasks[uniqueIdentifier] = Task {
                var queued = row
                if await context.credentials.ask(context, challenge, for: row) {
                    queued.state = .queued
                    do {
                        try context.store.save(queued)
                    } catch QueueError.unknownDownload {
                        // Cancelled while the app was asked: the row is gone, and so must the bytes be.
                        TransferOutcome.discardFiles(
                            partialPath: otherwise.partialPath, finishedPath: otherwise.finishedPath)
                    } catch {
                        context.observe(.queueFailed("\(uniqueIdentifier): \(error)"))
                    }
                    context.events.post(.transferEnded)
                } else {
                    context.credentials.forget(uniqueIdentifier)
                    context.outcomes.add(otherwise)
                }
                self.tasks.withLock { _ = $0.removeValue(forKey: uniqueIdentifier) }
                context.events.post(.queueChanged)
            }
        }
    }

    /// Waits for the challenges being asked about (a window runs to its end: its budget bounds it).
    /// [the engine loop's caller, once the loop ended]
    func shutdown() async {
        for task in tasks.withLock({ Array($0.values) }) { await task.value }
    }
}

/// Credentials an app's delegate or its extension gave for a download, and how many were given: kept in memory
/// only, as URLSession keeps a session's credentials.
final class Credentials: Sendable {
    /// Credentials asked for one download before its 401 is final.
    static let maximumChallenges = 3

    private let given = Mutex([String: (credential: Credential, count: Int)]())

    /// [any thread]
    func credential(for uniqueIdentifier: String) -> Credential? {
        given.withLock { $0[uniqueIdentifier]?.credential }
    }

    func forget(_ uniqueIdentifier: String) {
        given.withLock { _ = $0.removeValue(forKey: uniqueIdentifier) }
    }

    /// Whether the download's challenges may be asked about again (a few times at most). [any thread]
    func mayAsk(_ uniqueIdentifier: String) -> Bool {
        given.withLock { $0[uniqueIdentifier]?.count ?? 0 } < Self.maximumChallenges
    }

    /// Asks the app's delegate for credentials, else (no delegate answered) the extension, in a window of its own;
    /// true when one gave some to try (a few times at most). [a task of `ChallengeAnswers`]
    func ask(_ context: EngineContext, _ challenge: ServerChallenge, for download: QueuedDownload) async -> Bool {
        let count = given.withLock { $0[download.uniqueIdentifier]?.count ?? 0 }
        guard count < Self.maximumChallenges else { return false }
        var answer = await context.delegates?.challenge(
            download.described, of: download.appIdentifier, challenge.described(previousFailureCount: count))
        if answer == nil { answer = await askExtension(context, challenge, download, previousFailureCount: count) }
        guard case .useCredential(let user, let password)? = answer else { return false }
        given.withLock {
            $0[download.uniqueIdentifier] = (Credential(host: challenge.host, user: user, password: password), count + 1)
        }
        return true
    }

    /// The extension's answer (`backgroundDownload(_:didReceive:)`); nil when its window ended without one.
    private func askExtension(
        _ context: EngineContext, _ challenge: ServerChallenge, _ download: QueuedDownload, previousFailureCount: Int
    ) async -> ChallengeAnswer? {
        guard let app = try? context.store.app(download.appIdentifier) else { return nil }
        let event = WindowEvent.challenge(
            download.described, challenge.described(previousFailureCount: previousFailureCount))
        do {
            let outcome = try await WindowLauncher(context: context).open(
                app, for: .challenge(identifier: download.identifier), [event])
            return outcome.challengeAnswers[0]
        } catch {
            context.observe(.queueFailed("asking \(app.appIdentifier)'s extension about a challenge: \(error)"))
            return nil
        }
    }
}

