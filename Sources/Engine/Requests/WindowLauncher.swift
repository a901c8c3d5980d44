import ExtensionRuntime
import Foundation
import Queue
import Vocabulary

/// Opens every extension window the engine opens (content requests, managed packs' questions, challenges,
/// completions): the app's extension, the engine's limits, the app group's container, the app's download manager
/// as the window's host services, a thread of the blocking pool's own, and one `window` event when it ends.
struct WindowLauncher {
    let context: EngineContext

    /// Runs `events` in a window of `app`'s extension and reports its outcome.
    /// - Parameter onReturned: takes what a content request returns as it arrives (`ExtensionWindow.run`).
    func open(
        _ app: AppRecord, for purpose: WindowPurpose, _ events: [WindowEvent],
        onReturned: (@Sendable (Int, [Download]) -> Void)? = nil
    ) async throws -> WindowOutcome {
        let (plugin, limits, group) = (app.pluginPath, context.settings.limits, context.dataRoot.appGroup(of: app))
        let services = AppDownloads(context: context, appIdentifier: app.appIdentifier)
        // A window blocks its thread (waitpid, poll) for up to its budget: long work on the blocking pool.
        let outcome = try await context.blocking.run {
            try ExtensionWindow(pluginPath: plugin, limits: limits, appGroup: group)
                .run(events, services: services, onReturned: onReturned)
        }
        context.observe(.window(purpose, outcome, appIdentifier: app.appIdentifier))
        return outcome
    }
}
