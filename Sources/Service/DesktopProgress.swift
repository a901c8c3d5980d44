import Desktop
import Engine
import Foundation
import Synchronization
import Vocabulary

/// What the service shows on the desktop (`DesktopShell`): a launch's wait for its essential downloads, always; the
/// foreground downloads of an app that opted in (`BAHostShowsDownloadProgress`). docs/SERVICE.md, "On the desktop".
extension BackgroundAssetsService {
    /// Runs `wait` (the wait for `app`'s essential downloads) while the desktop shows its progress, then closes that
    /// and tells each essential download that failed, with a "Try again" that schedules it again. Without a session
    /// bus, only `wait`.
    func showingOnTheDesktop(
        _ app: String, _ wait: () async throws -> [DownloadStatus]
    ) async throws -> [DownloadStatus] {
        guard let shell = desktop() else { return try await wait() }
        let face = DesktopEntry.find(app)
        let progress = Self.follow(shell, face, summary: "Downloading required content") { [engine] in
            try? engine.essentialProgress(app)
        }
        let failures: [DownloadStatus]
        do {
            failures = try await wait()
        } catch {
            progress.cancel()
            if await progress.value { shell.endWaiting(face) }
            throw error
        }
        progress.cancel()
        if await progress.value { shell.endWaiting(face) }
        for failure in failures {
            let error = failure.error ?? HostError.bahost("failed")
            shell.showFailure(
                face, asset: failure.identifier, domain: error.domain, code: error.code, message: error.message
            ) { [engine, logger] in
                switch engine.scheduleAgain(app, identifier: failure.identifier) {
                case .success: logger.info("\(app): \(failure.identifier) scheduled again from the desktop")
                case .failure(let error): logger.notice("\(app): \(failure.identifier) not scheduled again: \(error)")
                }
            }
        }
        return failures
    }

    /// The app asked for something in the foreground: when it opted in, the desktop shows its foreground downloads'
    /// progress until none is left (one follower an app at a time).
    func showForegroundProgress(_ app: String) {
        guard (try? engine.app(app))??.showsDownloadProgress == true, let shell = desktop() else { return }
        guard foregroundFollowers.withLock({ $0.insert(app).inserted }) else { return }
        let face = DesktopEntry.find(app)
        Task { [engine] in
            let follower = Self.follow(shell, face, summary: "Downloading") { try? engine.foregroundProgress(app) }
            // Until none is left: given a moment to be queued, then as long as one is active.
            var seen = false
            for round in 0... {
                let left = (try? engine.foregroundProgress(app))?.left ?? 0
                if left > 0 { seen = true }
                if left == 0 && (seen || round >= 8) { break }
                try? await Task.sleep(for: .milliseconds(250))
            }
            follower.cancel()
            if await follower.value { shell.endWaiting(face) }
            _ = foregroundFollowers.withLock { $0.remove(app) }
        }
    }

    /// Shows `read`'s progress until cancelled, at most four times a second and only when it moved; returns whether
    /// anything was shown.
    private static func follow(
        _ shell: DesktopShell, _ face: DesktopEntry, summary: String,
        _ read: @escaping @Sendable () -> (received: Int64, expected: Int64, left: Int)?
    ) -> Task<Bool, Never> {
        Task {
            var last: LaunchNotice.Progress?
            var shown = false
            while !Task.isCancelled {
                if let (received, expected, left) = read(), left > 0 {
                    let now = LaunchNotice.Progress(received: received, expected: expected, left: left)
                    if now != last { shell.showWaiting(face, now, summary: summary) }
                    last = now
                    shown = true
                }
                try? await Task.sleep(for: .milliseconds(250))
            }
            return shown
        }
    }
}
