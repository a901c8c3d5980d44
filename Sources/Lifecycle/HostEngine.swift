import CBAExtension
import Delivery
import ExtensionRuntime
import Foundation
import Policy
import Queue
import Synchronization
import Transfer

/// Runs Apple's life cycle for installed apps: fetch the manifest, run the extension's content request, apply
/// policy, queue what it returns, perform the transfers (essential first, by priority, within the concurrency
/// limits, retrying what is transient), and deliver each completion back in a fresh extension window.
///
/// Everything the engine decides is in the queue before it acts on it, so a host killed at any moment picks up
/// where it was with `drain` (partial files resume, finished files are not fetched again, completions are still
/// delivered).
public final class HostEngine: Sendable {
    public struct Settings: Sendable {
        public var transfer: TransferConfiguration
        public var retry: RetryPolicy
        public var limits: WindowLimits
        /// Transfers at once, over all apps.
        public var maximumConcurrentTransfers: Int
        /// Transfers at once to one host.
        public var maximumTransfersPerHost: Int
        /// How long completions may wait to be batched into one window while transfers are still running.
        public var deliveryDelay: Duration

        public init(
            transfer: TransferConfiguration = TransferConfiguration(), retry: RetryPolicy = .default,
            limits: WindowLimits = .default, maximumConcurrentTransfers: Int = 4, maximumTransfersPerHost: Int = 2,
            deliveryDelay: Duration = .seconds(2)
        ) {
            self.transfer = transfer
            self.retry = retry
            self.limits = limits
            self.maximumConcurrentTransfers = maximumConcurrentTransfers
            self.maximumTransfersPerHost = maximumTransfersPerHost
            self.deliveryDelay = deliveryDelay
        }
    }

    public let store: QueueStore
    public let dataRoot: DataRoot
    let settings: Settings
    let observe: LifecycleObserver
    private let router: AppDelegateRouter?
    private let client: TransferClient
    private let executor: TransferExecutor
    /// An exclusive `flock` on the data root, held for the engine's life (the kernel releases it if the host dies).
    private let dataRootLock: Int32
    private let signal = WakeSignal()
    private let state = Mutex(EngineState())

    private struct EngineState {
        /// Running transfers: their host (for the per-host cap) and task (to cancel).
        var running: [String: (host: String, task: Task<Void, Never>)] = [:]
        /// Deliveries in progress, one per app: a slow extension window or app delegate holds up only its own app.
        var deliveries: [String: Task<Void, Never>] = [:]
        /// Apps waiting for their essential downloads before they may launch.
        var awaitingLaunch: Set<String> = []
        /// When an app's oldest undelivered completion appeared.
        var pendingSince: [String: ContinuousClock.Instant] = [:]
        /// Credentials an app's delegate gave for a download, and how many it has given (kept in memory only, as
        /// URLSession keeps a session's credentials).
        var credentials: [String: (credential: Credential, given: Int)] = [:]
    }

    /// Credentials asked of an app for one download before its 401 is final.
    static let maximumChallenges = 3

    /// - Parameter router: where completions and challenges go before the extension (the service's apps).
    public init(
        dataRoot: DataRoot, settings: Settings, router: AppDelegateRouter? = nil,
        observe: @escaping LifecycleObserver
    ) throws {
        try dataRoot.prepare()
        self.dataRoot = dataRoot
        // One engine per data root: a second (a `bahost run` beside the daemon) would perform the same transfers.
        dataRootLock = open(dataRoot.url.appendingPathComponent("lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard dataRootLock >= 0, flock(dataRootLock, LOCK_EX | LOCK_NB) == 0 else {
            if dataRootLock >= 0 { close(dataRootLock) }
            throw EngineError.dataRootInUse(dataRoot.url.path)
        }
        store = try QueueStore(path: dataRoot.queuePath)
        self.settings = settings
        self.router = router
        self.observe = observe
        // Transfers that were moving when a previous host died are queued again, to resume.
        try store.recoverInterruptedTransfers()
        // Last: once made, the client and the executor must be shut down, so nothing after them may throw.
        client = try TransferClient(settings.transfer)
        executor = TransferExecutor(threads: settings.maximumConcurrentTransfers)
    }

    deinit { close(dataRootLock) }

    /// Stops running transfers, waits for each to record where it stopped (its partial file stays, to resume), and
    /// closes the HTTP client.
    public func shutdown() async {
        let (running, deliveries) = state.withLock { ($0.running, $0.deliveries) }
        for (_, entry) in running { entry.task.cancel() }
        for (_, entry) in running { await entry.task.value }
        // A delivery window runs to its end (its budget bounds it), so that what it delivered is recorded.
        for (_, task) in deliveries { await task.value }
        try? await client.shutdown()
        await executor.shutdown()
    }

    /// Wakes the transfer loop: something was queued or promoted.
    public func wake() { signal.fire() }

    /// Wakes the transfer loop for a newly queued download, unless it could not start now anyway (every transfer
    /// slot, or every slot for its host, is taken): it is looked at when one frees. An app scheduling thousands one
    /// call at a time then costs the engine nothing per call.
    func wake(forQueued download: QueuedDownload) {
        let couldStart = download.foreground
            || state.withLock { state in
                state.running.count < settings.maximumConcurrentTransfers
                    && state.running.values.filter { $0.host == download.host }.count < settings.maximumTransfersPerHost
            }
        if couldStart { signal.fire() }
    }

    // MARK: Content requests

    /// Fetches the app's manifest (or takes `localManifest`), runs the extension's content request in a window, and
    /// queues what it returns under the app's policy. Returns the window's outcome, or nil when the manifest could
    /// not be fetched (its failure is then queued for delivery to the extension, as Apple does).
    public func contentRequest(_ request: ContentRequest, appIdentifier: String, localManifest: String? = nil)
        async throws -> WindowOutcome?
    {
        guard let app = try store.app(appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
        try dataRoot.prepare(appGroupIdentifier: app.appGroupIdentifier)
        let manifestPath: String
        if let localManifest {
            manifestPath = try Self.readOnlyCopy(of: localManifest, in: dataRoot.transfers)
        } else {
            switch await fetchManifest(for: app) {
            case .success(let path):
                manifestPath = path
            case .failure(let error):
                observe(.manifestFailed(error))
                let manifest = ExtensionDownload(
                    kind: .manifest, identifier: "BAManifestURL", url: app.manifestURL,
                    applicationGroupIdentifier: app.appGroupIdentifier, fileSize: 0)
                try store.recordRefused(manifest, for: appIdentifier, error: error)
                return nil
            }
        }
        let info = try store.app(appIdentifier)!.policy.allowance.extensionInfo
        let services = QueueHostServices(engine: self, appIdentifier: appIdentifier)
        let outcome = try await Self.onWindowThread {
            try ExtensionWindow(pluginPath: app.pluginPath, limits: self.settings.limits, appGroup: self.appGroup(of: app)).run(
                [.contentRequest(request, manifestPath: manifestPath, info: info)], services: services)
        }
        observe(.window(.contentRequest(request), outcome, appIdentifier: appIdentifier))
        try admit(outcome.returnedDownloads, for: request, appIdentifier: appIdentifier)
        if request == .install || request == .update {
            state.withLock { _ = $0.awaitingLaunch.insert(appIdentifier) }
            try announceLaunchIfReady(appIdentifier)
        }
        return outcome
    }

    /// Queues what a content request returned: each download checked for shape, URL, allow list and allowance;
    /// each refused one recorded so that the extension hears of it like any failure.
    private func admit(_ downloads: [ExtensionDownload], for request: ContentRequest, appIdentifier: String) throws {
        guard let app = try store.app(appIdentifier) else { return }
        let (valid, invalid) = DownloadValidation.validate(downloads, for: request, rules: app.policy.rules)
        var refused = invalid.map { ($0.download, $0.error) }
        let results = try store.enqueue(valid, for: appIdentifier) { app, download in
            var policy = app.policy
            let error = policy.admit(download, for: request)
            app.take(policy)
            return error
        }
        for (download, result) in results {
            switch result {
            case .success(let queued): observe(.queued(queued))
            case .failure(let error): refused.append((download, error))
            }
        }
        for (download, error) in refused {
            observe(.rejected(download, error))
            try store.recordRefused(download, for: appIdentifier, error: error)
        }
    }

    /// Downloads the manifest into a read-only file, under the app's policy: its bytes count against the
    /// download allowance (203 when none is left, 204 when it is larger than what is left).
    private func fetchManifest(for app: AppRecord) async -> Result<String, HostError> {
        let policy = app.policy
        if let refusal = policy.checkURL(app.manifestURL) { return .failure(refusal) }
        if let refusal = policy.allowance.refusalToStart("the manifest", essential: false) { return .failure(refusal) }
        let partial = dataRoot.transfers.appendingPathComponent("manifest-\(UUID().uuidString)").path
        let limit = policy.allowance.unreservedBytesLeft(essential: false)
        let request = TransferRequest(
            url: app.manifestURL, expectedSize: 0, partialPath: partial, byteLimit: limit,
            checkURL: { url in policy.checkURL(url).map(TransferError.init(refusal:)) })
        var attempt = 0
        while true {
            attempt += 1
            switch await client.perform(request, observer: NoProgress()) {
            case .success(let bytes):
                observe(.manifestFetched(bytes: bytes))
                do {
                    try store.updateApp(app.appIdentifier) { app in
                        var policy = app.policy
                        if policy.allowance.restricted { policy.allowance.charge(bytes, essential: false) }
                        app.take(policy)
                    }
                    chmod(partial, 0o444)
                    return .success(partial)
                } catch {
                    unlink(partial)
                    return .failure(HostError(code: -1, domain: TransferError.hostDomain, message: "\(error)"))
                }
            case .failure(let error):
                if error.code == TransferError.byteLimitExceeded {
                    return .failure(Allowance.exceeded("the manifest", limit: limit ?? 0))
                }
                guard let delay = settings.retry.delay(afterAttempt: attempt, error: error, random: { .random(in: 0..<1) })
                else {
                    unlink(partial)
                    return .failure(HostError(error))
                }
                observe(.manifestWaiting(HostError(error), retryIn: delay))
                try? await Task.sleep(for: delay)
            }
        }
    }

    // MARK: Draining the queue

    /// Performs transfers and delivers completions for `appIdentifiers` until none of them has work left.
    public func drain(_ appIdentifiers: [String]) async throws {
        try await run(Set(appIdentifiers), forever: false)
    }

    /// Performs transfers and delivers completions for every installed app, as they come, until cancelled (the
    /// service).
    public func serve() async throws {
        try await run(nil, forever: true)
    }

    private func run(_ only: Set<String>?, forever: Bool) async throws {
        while !Task.isCancelled {
            let apps = try only ?? Set(store.apps().map(\.appIdentifier))
            let snapshot = try startRunnable(apps)
            for app in apps where shouldDeliver(app, snapshot) { startDelivery(app) }
            let running = state.withLock { !$0.running.isEmpty || !$0.deliveries.isEmpty }
            let work = apps.contains { snapshot.hasWork($0) }
            if !running && !work && !forever { return }
            if !running && work {
                // Nothing runs in this engine, so a row still marked downloading lost its transfer (the queue failed
                // to record how it ended): queue it again rather than wait for it forever.
                try store.recoverInterruptedTransfers()
            }
            await signal.wait(for: nextWake(snapshot))
        }
    }

    private func nextWake(_ snapshot: QueueStore.Snapshot) -> Duration {
        var wait = Duration.seconds(1)
        if let retry = snapshot.nextRetry {
            wait = min(wait, .milliseconds(max(0, Int64(retry.timeIntervalSinceNow * 1000))))
        }
        let oldest = state.withLock { $0.pendingSince.values.min() }
        if let oldest { wait = min(wait, max(.zero, oldest + settings.deliveryDelay - ContinuousClock.now)) }
        return wait
    }

    /// Starts what may start: best first, within the global and per-host limits, which foreground downloads
    /// (the app is waiting for them) do not wait for. It asks the queue only for as many as it can start, and
    /// marks them started in one transaction. Returns the queue as it was read (before what this started).
    private func startRunnable(_ apps: Set<String>) throws -> QueueStore.Snapshot {
        while true {
            let (running, perHost) = state.withLock { state in
                (Set(state.running.keys), Dictionary(state.running.values.map { ($0.host, 1) }, uniquingKeysWith: +))
            }
            var count = running.count
            var hosts = perHost
            let snapshot = try store.snapshot(
                now: Date(), apps: apps, excluding: running,
                saturatedHosts: Set(hosts.filter { $0.value >= settings.maximumTransfersPerHost }.keys),
                backgroundLimit: settings.maximumConcurrentTransfers - count)
            // Candidates turned away because their host filled up during this pass: another pass, with that host
            // left out, may find others for the slots still free.
            var turnedAway = false
            var chosen: [QueuedDownload] = []
            for download in snapshot.runnable {
                guard download.foreground
                    || (count < settings.maximumConcurrentTransfers
                        && hosts[download.host, default: 0] < settings.maximumTransfersPerHost)
                else {
                    turnedAway = true
                    continue
                }
                count += 1
                hosts[download.host, default: 0] += 1
                chosen.append(download)
            }
            let started = try store.startTransfers(chosen)
            var appRecords: [String: AppRecord] = [:]
            for download in started {
                if appRecords[download.appIdentifier] == nil {
                    appRecords[download.appIdentifier] = try store.app(download.appIdentifier)
                }
                guard let app = appRecords[download.appIdentifier] else { continue }
                state.withLock { state in
                    let task = Task(executorPreference: executor) { await self.transfer(download, app: app) }
                    state.running[download.uniqueIdentifier] = (download.host, task)
                }
            }
            if !turnedAway || count >= settings.maximumConcurrentTransfers || started.isEmpty { return snapshot }
        }
    }

    /// Stops a running transfer (it was cancelled); its row is already gone.
    func stopTransfer(_ uniqueIdentifier: String) {
        state.withLock {
            $0.running[uniqueIdentifier]?.task.cancel()
            _ = $0.credentials.removeValue(forKey: uniqueIdentifier)
        }
        unlink(dataRoot.partialPath(for: uniqueIdentifier))
    }

    /// Removes an app: its queue, its running transfers and their partial files, its undelivered files, and its
    /// group's container when no other installed app shares the group.
    public func uninstall(_ appIdentifier: String) throws {
        guard let app = try store.app(appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
        for download in try store.uninstall(appIdentifier) {
            stopTransfer(download.uniqueIdentifier)
        }
        state.withLock { state in
            _ = state.pendingSince.removeValue(forKey: appIdentifier)
            _ = state.awaitingLaunch.remove(appIdentifier)
        }
        if try !store.apps().contains(where: { $0.appGroupIdentifier == app.appGroupIdentifier }) {
            try? FileManager.default.removeItem(at: dataRoot.container(for: app.appGroupIdentifier))
        }
    }

    /// One attempt at one download (already marked as moving), with its outcome made durable.
    private func transfer(_ queued: QueuedDownload, app: AppRecord) async {
        let uniqueIdentifier = queued.uniqueIdentifier
        defer {
            state.withLock { _ = $0.running.removeValue(forKey: uniqueIdentifier) }
            signal.fire()
        }
        do {
            let policy = app.policy
            let download = queued.download
            let limit = download.fileSize == 0 ? policy.allowance.unreservedBytesLeft(essential: download.isEssential) : nil
            let recorder = ProgressRecorder(engine: self, download: queued)
            let request = TransferRequest(
                url: download.url ?? "", headers: download.httpHeaders, expectedSize: download.fileSize,
                sha256: download.sha256, partialPath: dataRoot.partialPath(for: uniqueIdentifier),
                validator: Validator(etag: queued.etag, lastModified: queued.lastModified), byteLimit: limit,
                credential: state.withLock { $0.credentials[uniqueIdentifier]?.credential },
                checkURL: { url in policy.checkURL(url).map(TransferError.init(refusal:)) })
            let result = await client.perform(request, observer: recorder)

            // Cancelled while it ran: the row is gone, and so must the bytes be. Nothing else changes a moving row's
            // columns that the engine saves (a promotion sets only `foreground`), so the copy here is current.
            guard try store.contains(uniqueIdentifier) else {
                unlink(request.partialPath)
                return
            }
            var current = queued
            current.etag = recorder.validator?.etag ?? current.etag
            current.lastModified = recorder.validator?.lastModified ?? current.lastModified
            switch result {
            case .success(let size):
                state.withLock { _ = $0.credentials.removeValue(forKey: uniqueIdentifier) }
                try finish(&current, size: size, partialPath: request.partialPath, app: app)
            case .failure(let error):
                if let challenge = error.challenge, await answer(challenge, for: current) {
                    current.state = .queued
                    try store.save(current)
                    return
                }
                state.withLock { _ = $0.credentials.removeValue(forKey: uniqueIdentifier) }
                try fail(&current, error: error, byteLimit: limit)
            }
            try announceLaunchIfReady(current.appIdentifier)
        } catch {
            // The queue itself failed (the disk under the database is full?): the row stays as it was, to resume.
            observe(.queueFailed("\(uniqueIdentifier): \(error)"))
        }
    }

    /// Asks the app's delegate for credentials; true when it gave some to try (a few times at most).
    private func answer(_ challenge: ServerChallenge, for download: QueuedDownload) async -> Bool {
        let given = state.withLock { $0.credentials[download.uniqueIdentifier]?.given ?? 0 }
        guard let router, given < Self.maximumChallenges,
            case .useCredential(let user, let password)? = await router.challenge(
                download, challenge, previousFailureCount: given)
        else { return false }
        state.withLock {
            $0.credentials[download.uniqueIdentifier] = (
                Credential(host: challenge.host, user: user, password: password), given + 1
            )
        }
        return true
    }

    private func finish(_ queued: inout QueuedDownload, size: Int64, partialPath: String, app: AppRecord) throws {
        // Into the container in one rename: a finished file never appears half-written.
        let destination = dataRoot.deliveries(for: app.appGroupIdentifier)
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        let path = destination.appendingPathComponent(DataRoot.fileName(queued.uniqueIdentifier)).path
        guard rename(partialPath, path) == 0 else {
            try fail(&queued, error: .permanent(Int64(errno), "cannot move the finished file into the container"), byteLimit: nil)
            return
        }
        if queued.download.fileSize == 0 {
            try store.updateApp(app.appIdentifier) { app in
                var policy = app.policy
                if policy.allowance.restricted { policy.allowance.charge(size, essential: queued.isEssential) }
                app.take(policy)
            }
        }
        queued.state = .finished
        queued.bytesReceived = size
        queued.filePath = path
        queued.error = nil
        try store.save(queued)
        observe(.finished(queued))
        completionPending(queued.appIdentifier)
    }

    private func fail(_ queued: inout QueuedDownload, error: TransferError, byteLimit: Int64?) throws {
        // Apple: a foreground download fails at once when the network is away, rather than waiting for it.
        let waits = !(queued.foreground && error.kind == .network)
        if waits, let delay = settings.retry.delay(afterAttempt: queued.attempts, error: error, random: { .random(in: 0..<1) }) {
            let until = Date(timeIntervalSinceNow: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
            queued.state = error.kind == .network ? .waitingForNetwork : .waitingToRetry
            queued.retryAt = until
            queued.error = HostError(error)
            queued.bytesReceived = Self.fileLength(dataRoot.partialPath(for: queued.uniqueIdentifier))
            try store.save(queued)
            observe(.paused(queued, waitingForNetwork: error.kind == .network, until: until, error: HostError(error)))
            return
        }
        let reason = error.code == TransferError.byteLimitExceeded
            ? Allowance.exceeded("'\(queued.identifier)'", limit: byteLimit ?? 0) : HostError(error)
        unlink(dataRoot.partialPath(for: queued.uniqueIdentifier))
        queued.state = .failed
        queued.error = reason
        try store.save(queued)
        observe(.failed(queued, reason))
        completionPending(queued.appIdentifier)
    }

    /// A completion was recorded: a running app's delegate gets it now, without waiting for the loop's next turn;
    /// for the extension it waits to be batched.
    private func completionPending(_ appIdentifier: String) {
        state.withLock { state in
            if state.pendingSince[appIdentifier] == nil { state.pendingSince[appIdentifier] = .now }
        }
        if router?.hasDelegate(appIdentifier) == true { startDelivery(appIdentifier) }
    }

    private func announceLaunchIfReady(_ appIdentifier: String) throws {
        guard state.withLock({ $0.awaitingLaunch.contains(appIdentifier) }) else { return }
        guard try !store.hasActiveDownloads(for: appIdentifier, essential: true) else { return }
        let first = state.withLock { $0.awaitingLaunch.remove(appIdentifier) != nil }
        if first { observe(.appMayLaunch(appIdentifier: appIdentifier)) }
    }

    // MARK: Delivery

    /// Completions go to a running app's delegate at once. For the extension they go out when the app's transfers
    /// are done, when a batch is full, or when the oldest has waited long enough.
    private func shouldDeliver(_ appIdentifier: String, _ snapshot: QueueStore.Snapshot) -> Bool {
        let pending = snapshot.pendingCompletions[appIdentifier, default: 0]
        guard pending > 0 else {
            state.withLock { _ = $0.pendingSince.removeValue(forKey: appIdentifier) }
            return false
        }
        if router?.hasDelegate(appIdentifier) == true { return true }
        if pending >= CompletionDelivery.defaultBatchSize || !snapshot.appsWithActiveDownloads.contains(appIdentifier) {
            return true
        }
        let since = state.withLock { state in
            if state.pendingSince[appIdentifier] == nil { state.pendingSince[appIdentifier] = .now }
            return state.pendingSince[appIdentifier]!
        }
        return ContinuousClock.now - since >= settings.deliveryDelay
    }

    private func startDelivery(_ appIdentifier: String) {
        state.withLock { state in
            guard state.deliveries[appIdentifier] == nil else { return }
            state.deliveries[appIdentifier] = Task {
                do {
                    try await self.deliver(appIdentifier)
                } catch {
                    // The queue could not record a delivery: it stays pending, to be delivered again, not at once.
                    self.observe(.queueFailed("delivering to \(appIdentifier): \(error)"))
                    try? await Task.sleep(for: .seconds(1))
                }
                self.state.withLock { _ = $0.deliveries.removeValue(forKey: appIdentifier) }
                self.signal.fire()
            }
        }
    }

    private func deliver(_ appIdentifier: String) async throws {
        guard let app = try store.app(appIdentifier) else { return }
        state.withLock { _ = $0.pendingSince.removeValue(forKey: appIdentifier) }
        if let router, router.hasDelegate(appIdentifier) {
            var declined = false
            for var completion in try store.pendingCompletions(for: appIdentifier) {
                guard await router.offer(completion) else {
                    declined = true
                    continue
                }
                // Delivered: a file the delegate left where it was is deleted, as Apple does.
                if let path = completion.filePath { unlink(path) }
                completion.filePath = nil
                completion.delivered = true
                try store.save(completion)
                observe(.deliveredToApp(completion))
            }
            // What the app's delegate did not handle (it lacks the method) wakes the extension now.
            guard declined else { return }
        }
        let delivery = CompletionDelivery(store: store, limits: settings.limits, appGroup: appGroup(of: app))
        let services = QueueHostServices(engine: self, appIdentifier: appIdentifier)
        guard let report = try await Self.onWindowThread({ try delivery.deliverBatch(for: app, services: services) })
        else { return }
        observe(.window(
            .completions(report.delivered.count + report.abandoned.count), report.outcome, appIdentifier: appIdentifier))
        report.delivered.forEach { observe(.delivered($0)) }
        report.abandoned.forEach { observe(.abandoned($0)) }
    }

    // MARK: Helpers

    func appGroup(of app: AppRecord) -> ExtensionWindow.AppGroup {
        ExtensionWindow.AppGroup(
            identifier: app.appGroupIdentifier, container: dataRoot.container(for: app.appGroupIdentifier).path)
    }

    /// Windows block their thread for up to their budget: they get a thread of their own, not one of Swift's
    /// cooperative pool, which the transfers need.
    static func onWindowThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }

    static func readOnlyCopy(of path: String, in folder: URL) throws -> String {
        let copy = folder.appendingPathComponent("manifest-\(UUID().uuidString)").path
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        chmod(copy, 0o444)
        return copy
    }

    static func fileLength(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }
}

public enum EngineError: Error, CustomStringConvertible {
    case dataRootInUse(String)

    public var description: String {
        switch self {
        case .dataRootInUse(let path):
            "another bahost (the daemon, or a run) is using the data root \(path); use its service or another --data-root"
        }
    }
}

/// Makes a transfer's progress durable at bounded intervals and reports it.
private final class ProgressRecorder: TransferObserver {
    private let engine: HostEngine
    private let lock: Mutex<State>
    private struct State {
        var download: QueuedDownload
        var validator: Validator?
        var savedBytes: Int64 = 0
        var savedAt = ContinuousClock.now
        /// Whether the queue holds the validator of the bytes being written.
        var validatorSaved = false
    }

    init(engine: HostEngine, download: QueuedDownload) {
        self.engine = engine
        lock = Mutex(State(download: download))
    }

    var validator: Validator? { lock.withLock { $0.validator } }

    func began(validator: Validator, resumingAt offset: Int64) {
        let (download, save) = lock.withLock { state -> (QueuedDownload, Bool) in
            let stored = Validator(etag: state.download.etag, lastModified: state.download.lastModified)
            state.validator = validator
            state.download.etag = validator.etag
            state.download.lastModified = validator.lastModified
            state.download.bytesReceived = offset
            state.savedBytes = offset
            state.savedAt = .now
            // A stored validator must never describe other bytes than the file's, so a new one is durable before
            // they are written. With none stored the write waits for the first progress report (100 ms in): bytes
            // without a validator are never resumed (the file starts over), which costs at most what arrived before
            // it, and a small file that arrives whole before then is spared a transaction.
            let storedAny = stored.etag != nil || stored.lastModified != nil
            state.validatorSaved = storedAny
            return (state.download, storedAny && stored != validator)
        }
        if save { try? engine.store.save(download) }
        engine.observe(.began(download, resumingAt: offset))
    }

    func progress(received: Int64, expected: Int64) {
        let (download, save) = lock.withLock { state -> (QueuedDownload, Bool) in
            state.download.bytesReceived = received
            // The last report (the file is whole) is left to the transfer's outcome, which records the validator.
            let unsavedValidator = !state.validatorSaved && (expected == 0 || received < expected)
            let due = unsavedValidator || received - state.savedBytes >= 4 << 20
                || ContinuousClock.now - state.savedAt >= .seconds(1)
            if due {
                state.savedBytes = received
                state.savedAt = .now
                state.validatorSaved = true
            }
            return (state.download, due)
        }
        if save { try? engine.store.save(download) }
        engine.observe(.progress(download, received: received, expected: expected))
    }
}

private struct NoProgress: TransferObserver {
    func began(validator: Validator, resumingAt offset: Int64) {}
    func progress(received: Int64, expected: Int64) {}
}

/// Wakes the drain loop: a transfer ended, something was scheduled, or a deadline came.
final class WakeSignal: Sendable {
    private let state = Mutex<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func fire() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.fired = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    func wait(for timeout: Duration) async {
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { self.fire() }
        }
        await withCheckedContinuation { continuation in
            let fired = state.withLock { state -> Bool in
                if state.fired {
                    state.fired = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if fired { continuation.resume() }
        }
        timer.cancel()
    }
}
