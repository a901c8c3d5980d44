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

    /// Up to this many downloads queued by one request, each has an event (a line of `bahost install` or `run`);
    /// beyond it, one event says how many (`queuedMany`): 100,000 lines serve nobody, and cost the host a second.
    static let eventPerDownloadLimit = 1_000

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
        let admission = Admission(try store.beginStaging(for: appIdentifier), request: request, policy: app.policy)
        let outcome = try await WindowLauncher(context: context).open(
            app, for: .contentRequest(request), [.contentRequest(request, manifestPath: manifestPath, info: info)],
            onReturned: { _, downloads in admission.stage(downloads) })
        // Apple queues what downloads(for:) returned: nothing from a call that never returned, and nothing at all
        // from an extension that broke the protocol.
        var returned = outcome.completedEvents == 1
        if case .protocolViolation = outcome.stopReason { returned = false }
        try admission.finish(returned: returned)
        let staged = admission.staged
        if staged.queued.count > Self.eventPerDownloadLimit {
            context.observe(.queuedMany(
                appIdentifier: appIdentifier, count: staged.queued.count, bytes: staged.queued.bytes,
                essential: staged.queued.essential))
        } else {
            try staged.forEachCommitted(.queued) { context.observe(.queued($0.status)) }
        }
        try staged.forEachCommitted(.failed) { row in
            if let error = row.error { context.observe(.rejected(row.download, error)) }
        }
        if staged.count > 0 { context.signal.fire() }
        // A large result leaves the heap with MiB freed but held (glibc keeps freed memory in its arenas).
        if staged.count > 1000 { HeapRelease.soon() }
        if request == .install || request == .update {
            context.launchGate.close(appIdentifier)
            try context.announceLaunchIfReady(appIdentifier)
        }
        return outcome
    }
}

/// What a content request returns, admitted as its window receives it (`StagedAdmission`): each download checked
/// for shape (`DownloadValidation`), for duplicates, and under the app's policy, which counts as it admits, then
/// queued all at once when the request returned, or dropped when it did not.
private final class Admission: @unchecked Sendable {  // safe: only the window's thread, a packet at a time
    let staged: StagedAdmission
    private let request: ContentRequest
    private var policy: AppPolicy
    /// The identifiers returned so far: one returned again is refused.
    private var identifiers = Set<String>()
    /// The queue's failure while staging: the rest is not staged, and the request fails with it.
    private var failure: Error?

    init(_ staged: StagedAdmission, request: ContentRequest, policy: AppPolicy) {
        self.staged = staged
        self.request = request
        self.policy = policy
    }

    /// On the window's thread, as each packet of downloads arrives.
    func stage(_ downloads: [Download]) {
        guard failure == nil else { return }
        do {
            try staged.stage(downloads.map(DownloadValidation.normalized)) { download in
                if let error = DownloadValidation.check(download, for: request, rules: policy.rules) { return error }
                let first = identifiers.insert(download.identifier).inserted
                return first ? nil : DownloadValidation.returnedTwice(download)
            } admit: { app, download in
                let error = policy.admitChecked(download)
                app.take(policy)
                return error
            }
        } catch {
            failure = error
        }
    }

    /// Queues what was staged when the request returned, else drops it; throws what failed while staging.
    func finish(returned: Bool) throws {
        if let failure {
            try? staged.discard()
            throw failure
        }
        if returned { try staged.commit() } else { try staged.discard() }
    }
}
