import ExtensionRuntime
import Foundation
import Policy
import Queue
import Vocabulary

/// One content request: the manifest, the extension's window, and admission of what it returned. Only what a
/// content request returned counts (Apple drops the result of a call that never returned); each returned download
/// is checked for shape, URL, allow list and allowance, and each refused one is recorded so that the extension
/// hears of it like any failure.
struct ContentRequestRunner {
    let context: EngineContext

    /// Fetches the app's manifest (or takes `localManifest`), runs the content request in a window, and queues what
    /// it returns. Returns the window's outcome, or nil when the manifest could not be fetched (its failure is then
    /// queued for delivery to the extension, as Apple does).
    func run(_ request: ContentRequest, appIdentifier: String, localManifest: String?) async throws -> WindowOutcome? {
        let store = context.store
        guard let app = try store.app(appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
        try context.dataRoot.prepare(appGroupIdentifier: app.appGroupIdentifier)
        let manifestPath: String
        if let localManifest {
            manifestPath = try ManifestFetch.readOnlyCopy(of: localManifest, in: context.dataRoot.transfers)
        } else {
            switch await ManifestFetch(context: context).fetch(for: app) {
            case .success(let path):
                manifestPath = path
            case .failure(let error):
                context.observe(.manifestFailed(error))
                let manifest = Download(
                    kind: .manifest, identifier: "BAManifestURL", url: app.effectiveManifestURL,
                    applicationGroupIdentifier: app.appGroupIdentifier, fileSize: 0)
                try store.recordRefused(manifest, for: appIdentifier, error: error)
                return nil
            }
        }
        let info = try store.app(appIdentifier)!.policy.allowance.extensionInfo
        let (limits, appGroup) = (context.settings.limits, context.dataRoot.appGroup(of: app))
        let services = AppDownloads(context: context, appIdentifier: appIdentifier)
        let outcome = try await onWindowThread {
            try ExtensionWindow(pluginPath: app.pluginPath, limits: limits, appGroup: appGroup).run(
                [.contentRequest(request, manifestPath: manifestPath, info: info)], services: services)
        }
        context.observe(.window(.contentRequest(request), outcome, appIdentifier: appIdentifier))
        try admit(outcome.returnedDownloads, for: request, appIdentifier: appIdentifier)
        // A large result leaves the heap with tens of MiB freed but held (glibc keeps freed memory in its arenas).
        if outcome.returnedDownloads.count > 1000 { HeapRelease.soon() }
        if request == .install || request == .update {
            context.launchGate.close(appIdentifier)
            try context.announceLaunchIfReady(appIdentifier)
        }
        return outcome
    }

    /// Queues what a content request returned, in one transaction; records what policy refused.
    private func admit(_ downloads: [Download], for request: ContentRequest, appIdentifier: String) throws {
        guard let app = try context.store.app(appIdentifier) else { return }
        let (valid, invalid) = DownloadValidation.validate(downloads, for: request, rules: app.policy.rules)
        var refused = invalid.map { ($0.download, $0.error) }
        // One policy for the whole set (its allow list is parsed once), counting as it admits.
        var policy = app.policy
        let results = try context.store.enqueue(valid, for: appIdentifier) { app, download in
            let error = policy.admit(download, for: request)
            app.take(policy)
            return error
        }
        for (download, result) in results {
            switch result {
            case .success(let queued): context.observe(.queued(queued))
            case .failure(let error): refused.append((download, error))
            }
        }
        for (download, error) in refused { context.observe(.rejected(download, error)) }
        try context.store.recordRefused(refused, for: appIdentifier)
        if !valid.isEmpty { context.signal.fire() }
    }
}

/// Windows block their thread for up to their budget: they get a thread of their own, not one of Swift's
/// cooperative pool, which the transfers need.
func onWindowThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
