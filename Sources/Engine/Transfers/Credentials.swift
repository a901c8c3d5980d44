import ExtensionRuntime
import Queue
import Synchronization
import Transfer
import Vocabulary

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
    /// true when one gave some to try (a few times at most). [a task of `EngineDriver`'s, asking]
    func ask(
        _ challenge: ServerChallenge, for download: QueuedDownload, delegates: AppDelegateRouter?,
        windows: WindowLauncher, store: QueueStore
    ) async -> Bool {
        let count = given.withLock { $0[download.uniqueIdentifier]?.count ?? 0 }
        guard count < Self.maximumChallenges else { return false }
        var answer = await delegates?.challenge(
            download.described, of: download.appIdentifier, challenge.described(previousFailureCount: count))
        if answer == nil {
            answer = await askExtension(windows, store, challenge, download, previousFailureCount: count)
        }
        guard case .useCredential(let user, let password)? = answer else { return false }
        given.withLock {
            $0[download.uniqueIdentifier] = (Credential(host: challenge.host, user: user, password: password), count + 1)
        }
        return true
    }

    /// The extension's answer (`backgroundDownload(_:didReceive:)`); nil when its window ended without one.
    private func askExtension(
        _ windows: WindowLauncher, _ store: QueueStore, _ challenge: ServerChallenge, _ download: QueuedDownload,
        previousFailureCount: Int
    ) async -> ChallengeAnswer? {
        guard let app = try? store.app(download.appIdentifier) else { return nil }
        let event = WindowEvent.challenge(
            download.described, challenge.described(previousFailureCount: previousFailureCount))
        do {
            let outcome = try await windows.open(
                app, for: .challenge(identifier: download.identifier), [event])
            return outcome.challengeAnswers[0]
        } catch {
            windows.observe(.queueFailed("asking \(app.appIdentifier)'s extension about a challenge: \(error)"))
            return nil
        }
    }
}

