import CBAExtension
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
        var outcome = try await onWindowThread {
            try ExtensionWindow(pluginPath: app.pluginPath, limits: limits, appGroup: appGroup).run(
                [.contentRequest(request, manifestPath: manifestPath, info: info)], services: services)
        }
        context.observe(.window(.contentRequest(request), outcome, appIdentifier: appIdentifier))
        // Moved into the queue rather than copied: a content request may return 100,000.
        let returned = outcome.returnedDownloads
        outcome.returnedDownloads = []
        try admit(returned, for: request, appIdentifier: appIdentifier)
        // A large result leaves the heap with tens of MiB freed but held (glibc keeps freed memory in its arenas).
        if returned.count > 1000 { HeapRelease.soon() }
        if request == .install || request == .update {
            context.launchGate.close(appIdentifier)
            try context.announceLaunchIfReady(appIdentifier)
        }
        return outcome
    }

    /// Queues what a content request returned, in one transaction, each download checked for shape and duplicates
    /// (`DownloadValidation`) and then under the app's policy, which counts as it admits; records what was refused.
    /// The downloads are held once, in place (`QueueStore.enqueue(_:…)`), and each event made as it is sent.
    private func admit(_ returned: consuming [Download], for request: ContentRequest, appIdentifier: String) throws {
        guard let app = try context.store.app(appIdentifier) else { return }
        var downloads = returned
        var policy = app.policy
        var identifiers = Set<String>()
        let admission = try context.store.enqueue(&downloads, for: appIdentifier) { download in
            if let error = DownloadValidation.check(download, for: request, rules: policy.rules) { return error }
            guard identifiers.insert(download.identifier).inserted else {
                return HostError(
                    BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED,
                    "identifier '\(download.identifier)' is returned more than once")
            }
            return nil
        } admit: { app, download in
            let error = policy.admitChecked(download)
            app.take(policy)
            return error
        }
        identifiers = []
        admission.forEachQueued(downloads, appIdentifier: appIdentifier) { context.observe(.queued($0)) }
        let refused = admission.refusals.sorted { $0.key < $1.key }.map { (downloads[$0.key], $0.value) }
        for (download, error) in refused { context.observe(.rejected(download, error)) }
        try context.store.recordRefused(refused, for: appIdentifier)
        if refused.count < downloads.count { context.signal.fire() }
    }
}

/// Windows block their thread for up to their budget: they get a thread of their own, not one of Swift's
/// cooperative pool, which the transfers need.
func onWindowThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
