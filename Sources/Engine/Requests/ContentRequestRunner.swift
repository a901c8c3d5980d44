import ExtensionRuntime
import Foundation
import HostVocabulary
import Policy
import Queue
import Vocabulary

/// One content request: the manifest, the extension's window, and admission of what it returned. Only what a
/// content request returned counts (Apple drops the result of a call that never returned); each returned download
/// is checked for shape, URL, allow list and allowance, and each refused one is recorded so that the extension
/// hears of it like any failure.
struct ContentRequestRunner {
    let store: QueueStore
    let dataRoot: DataRoot
    let manifests: ManifestFetch
    let windows: WindowLauncher
    let launchGate: LaunchGate
    /// What hears of the rows committed (`queueChanged`).
    let events: EngineEvents
    let observe: LifecycleObserver

    /// Up to this many downloads queued by one request, each has an event (a line of `bahost install` or `run`);
    /// beyond it, one event says how many (`queuedMany`): 100,000 lines serve nobody, and cost the host a second.
    static let eventPerDownloadLimit = 1_000

    /// Fetches the app's manifest (or takes `localManifest`), runs the content request in a window, and queues what
    /// it returns. Returns the window's outcome, or nil when the manifest could not be fetched (its failure is then
    /// queued for delivery to the extension, as Apple does).
    func run(_ request: ContentRequest, appIdentifier: String, localManifest: String?) async throws -> WindowOutcome? {
        guard let app = try store.app(appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
        try dataRoot.prepare(appGroupIdentifier: app.appGroupIdentifier)
        let manifestPath: String
        if let localManifest {
            manifestPath = try ManifestFetch.readOnlyCopy(of: localManifest, in: dataRoot.transfers)
        } else {
            switch await manifests.fetch(for: app) {
            case .success(let path):
                manifestPath = path
            case .failure(let error):
                observe(.manifestFailed(error))
                let manifest = Download(
                    kind: .manifest, identifier: "BAManifestURL", url: app.effectiveManifestURL,
                    applicationGroupIdentifier: app.appGroupIdentifier, fileSize: 0)
                try store.recordRefused(manifest, for: appIdentifier, error: error)
                return nil
            }
        }
        let info = try store.app(appIdentifier)!.policy.allowance.extensionInfo
        let admission = Admission(try store.beginStaging(for: appIdentifier), request: request, policy: app.policy)
        let outcome = try await windows.open(
            app, for: .contentRequest(request), [.contentRequest(request, manifestPath: manifestPath, info: info)],
            onReturned: { _, downloads in admission.stage(downloads) })
        // Apple queues what downloads(for:) returned: nothing from a call that never returned, and nothing at all
        // from an extension that broke the protocol.
        var returned = outcome.completedEvents == 1
        if case .protocolViolation = outcome.stopReason { returned = false }
        // The launch gate closes before the rows are committed: an essential download that ends at once is then
        // recorded with the gate closed, and the turn that records it opens the gate after telling its end.
        let gatesLaunch = request == .install || request == .update
        if gatesLaunch { launchGate.close(appIdentifier) }
        do {
            try admission.finish(returned: returned)
        } catch {
            if gatesLaunch { try? launchGate.announceIfReady(appIdentifier) }
            throw error
        }
        let staged = admission.staged
        if staged.queued.count > Self.eventPerDownloadLimit {
            observe(.queuedMany(
                appIdentifier: appIdentifier, count: staged.queued.count, bytes: staged.queued.bytes,
                essential: staged.queued.essential))
        } else {
            try staged.forEachCommitted(.queued) { observe(.queued($0.status)) }
        }
        try staged.forEachCommitted(.failed) { row in
            if let error = row.error { observe(.rejected(row.download, error)) }
        }
        if staged.count > 0 { events.post(.queueChanged) }
        // A large result leaves the heap with MiB freed but held (glibc keeps freed memory in its arenas).
        if staged.count > 1000 { HeapRelease.soon() }
        // With no essential download of its own, nothing else opens the gate for this request.
        if gatesLaunch && staged.queued.essential == 0 { try launchGate.announceIfReady(appIdentifier) }
        return outcome
    }
}

/// What a content request returns, admitted as its window receives it (`StagedAdmission`): each download checked
/// for shape (`DownloadValidation`), for duplicates and against the domain allow list on the window's thread, then
/// under the app's allowance (which counts as it admits) and into the stage on a serial queue of its own, so that
/// one packet is checked while the one before is written (the window's thread alone was the request's bound:
/// docs/performance/DECISIONS.md #32). Queued all at once when the request returned, or dropped when it did not. The allow list is
/// checked, and the URL's host for the queue's row found, where the URL was just parsed for the shape's check: on
/// the staging queue each URL was parsed again, and the staging queue became the request's bound.
///
/// Threads: `stage` on the window's thread; the staging on `queue`, in the packets' order, at most two packets
/// behind (the window waits, and counts the wait as the host's time); `finish` after the window, once the queue has
/// drained. `policy` is the queue's alone; the window's thread reads only `screen`, the policy as the request began
/// (its rules and allow list, and whether the app is restricted, which the request does not change).
private final class Admission: @unchecked Sendable {  // safe: see Threads above
    let staged: StagedAdmission
    private let request: ContentRequest
    private let screen: AppPolicy
    private var policy: AppPolicy
    /// The identifiers returned so far: one returned again is refused. The window's thread's.
    private var identifiers = Set<String>()
    /// The queue's failure while staging: the rest is not staged, and the request fails with it.
    private var failure: Error?
    private let queue = DispatchQueue(label: "bahost.content-request.staging")
    private let behind = DispatchSemaphore(value: 2)

    init(_ staged: StagedAdmission, request: ContentRequest, policy: AppPolicy) {
        self.staged = staged
        self.request = request
        screen = policy
        self.policy = policy
    }

    /// On the window's thread, as each packet of downloads arrives.
    func stage(_ downloads: [Download]) {
        // The refusals keep Apple's order: the shape, a duplicate here; then, on the queue, an identifier the queue
        // has active, the allow list (found here), the allowance.
        var offAllowList: [HostError?] = []
        offAllowList.reserveCapacity(downloads.count)
        let checked = downloads.map { returned -> (download: Download, error: HostError?, host: String?) in
            let download = DownloadValidation.normalized(returned)
            if let error = DownloadValidation.check(download, for: request, rules: screen.rules) {
                offAllowList.append(nil)
                return (download, error, nil)
            }
            offAllowList.append(download.url.flatMap(screen.checkAllowList))
            let first = identifiers.insert(download.identifier).inserted
            let error = first ? nil : DownloadValidation.returnedTwice(download)
            return (download, error, QueuedDownload.host(of: download))
        }
        let allowList = offAllowList
        behind.wait()
        queue.async { [self] in
            defer { behind.signal() }
            guard failure == nil else { return }
            do {
                try staged.stage(checked) { app, index in
                    let error = allowList[index] ?? policy.allowance.admit(checked[index].download)
                    app.take(policy)
                    return error
                }
            } catch {
                failure = error
            }
        }
    }

    /// Queues what was staged when the request returned, else drops it; throws what failed while staging.
    func finish(returned: Bool) throws {
        queue.sync {}  // what the window received is staged
        if let failure {
            try? staged.discard()
            throw failure
        }
        if returned { try staged.commit() } else { try staged.discard() }
    }
}
