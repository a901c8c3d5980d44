import ExtensionRuntime
import Foundation
import HostVocabulary
import Queue
import Transfer
import Vocabulary

/// Opens every extension window the engine opens (content requests, managed packs' questions, challenges,
/// completions): the app's extension, the engine's limits, the app group's container, the app's download manager
/// as the window's host services, a thread of the blocking pool's own, and one `window` event when it ends.
struct WindowLauncher {
    let limits: WindowLimits
    let dataRoot: DataRoot
    let blocking: BlockingPool
    let observe: LifecycleObserver
    /// Gives each window its app's `BADownloadManager` (`EngineDriver.downloads(for:)`).
    let driver: EngineDriver

    /// Runs `events` in a window of `app`'s extension and reports its outcome.
    /// - Parameter onReturned: takes what a content request returns as it arrives (`ExtensionWindow.run`).
    func open(
        _ app: AppRecord, for purpose: WindowPurpose, _ events: [WindowEvent],
        onReturned: (@Sendable (Int, [Download]) -> Void)? = nil
    ) async throws -> WindowOutcome {
        let (plugin, limits, group) = (app.pluginPath, limits, dataRoot.appGroup(of: app))
        let services = driver.downloads(for: app.appIdentifier)
        // A window blocks its thread (waitpid, poll) for up to its budget: long work on the blocking pool.
        let outcome = try await blocking.run {
            try ExtensionWindow(pluginPath: plugin, limits: limits, appGroup: group)
                .run(events, services: services, onReturned: onReturned)
        }
        observe(.window(purpose, outcome, appIdentifier: app.appIdentifier))
        return outcome
    }
}
