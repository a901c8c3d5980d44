import ExtensionRuntime
import Foundation
import Queue
import Vocabulary

/// Opens every extension window the engine opens (content requests, managed packs' questions, challenges,
/// completions): the app's extension, the engine's limits, the app group's container, the app's download manager
/// as the window's host services, a thread of its own, and one `window` event when it ends.
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
        let outcome = try await Self.onWindowThread {
            try ExtensionWindow(pluginPath: plugin, limits: limits, appGroup: group)
                .run(events, services: services, onReturned: onReturned)
        }
        context.observe(.window(purpose, outcome, appIdentifier: app.appIdentifier))
        return outcome
    }

    /// Windows block their thread for up to their budget: they get a thread of their own, not one of Swift's
    /// cooperative pool, which the transfers need. The installs of managed packs (long, blocking file work) use it
    /// too.
    static func onWindowThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }
}
