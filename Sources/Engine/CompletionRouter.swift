import Delivery
import ExtensionRuntime
import Foundation
import HostVocabulary
import Queue
import Synchronization
import Vocabulary

/// Decides when each app's finished and failed downloads are delivered, and to whom: a managed app's asset packs to
/// the host's own installer (`ManagedPacks`), then the rest to the running app's delegate when it has one (at once),
/// else to the extension, woken in a window for a batch. The exactly-once rule itself (claims, offers, settling,
/// redelivery) is Delivery's: this router only paces it. For the extension, completions go out when the app's
/// transfers are done, when a batch is full (as large as the extension's pace allows: `BatchPace`), or when the
/// oldest has waited `deliveryDelay`. One delivery runs per app at a time: a slow extension window or delegate
/// holds up only its own app. A completion held by an app process still in its callback is looked at again every
/// `claimCheckInterval` until its ticket is gone (delivered) or the process is (released). A delivery that fails (the
/// queue, the disk or the container's folder refused it) is tried again after a wait that doubles with each failure in
/// a row (`retryDelay`); the completions stay pending meanwhile, and a drain stops waiting for them after
/// `attemptsBeforeLeavingPending` failures in a row (`leftPending`).
final class CompletionRouter: Sendable {
    private let context: EngineContext
    private let state = Mutex(State())

    private struct State {
        /// Deliveries in progress, one per app.
        var deliveries: [String: Task<Void, Never>] = [:]
        /// When an app's oldest undelivered completion appeared.
        var pendingSince: [String: ContinuousClock.Instant] = [:]
        /// Apps with completions held by a receiver, and when their claims were last settled.
        var claimsCheckedAt: [String: ContinuousClock.Instant] = [:]
        /// How many completions each app's extension gets in its next window.
        var paces: [String: BatchPace] = [:]
        /// When each app's last delivery ended.
        var deliveryEnded: [String: ContinuousClock.Instant] = [:]
        /// Apps whose last deliveries failed: how many in a row, the last error, and when the next may start.
        var failures: [String: Failure] = [:]
        /// Whether a drain runs, which stops waiting after `attemptsBeforeLeavingPending` failures (the service
        /// keeps trying).
        var draining = false
    }

    struct Failure {
        var count: Int
        var error: String
        var retryAt: ContinuousClock.Instant
    }

    static let claimCheckInterval = Duration.seconds(1)
    /// Failures in a row after which `bahost run` and `bahost resume` stop waiting for an app's completions: about
    /// 3 s of retries, enough for a disk that was briefly full; what is left stays pending for the next run or the
    /// service.
    static let attemptsBeforeLeavingPending = 3

    /// The wait after `failures` failed deliveries in a row: 1 s, doubling, at most a minute (the service keeps
    /// trying, but a container's folder that stays broken must not cost a window and a log line every second).
    static func retryDelay(afterFailures failures: Int) -> Duration {
        min(.seconds(1 << min(max(failures - 1, 0), 6)), .seconds(60))
    }

    init(context: EngineContext) {
        self.context = context
    }

    var isIdle: Bool { state.withLock { $0.deliveries.isEmpty } }

    /// A completion was recorded: a running app's delegate gets it now, without waiting for the loop's next turn;
    /// for the extension it waits to be batched.
    func recorded(_ appIdentifier: String) {
        state.withLock { state in
            if state.pendingSince[appIdentifier] == nil { state.pendingSince[appIdentifier] = .now }
        }
        if context.delegates?.hasDelegate(appIdentifier) == true || isManaged(appIdentifier) { start(appIdentifier) }
    }

    /// A managed app's completions are its packs, installed by the host at once.
    private func isManaged(_ appIdentifier: String) -> Bool {
        (try? context.store.app(appIdentifier))??.hasManagedAssetPacks == true
    }

    /// Starts the deliveries that are due, given the queue as the scheduler read it (at `readSince` or later).
    func deliverDue(_ apps: Set<String>, _ snapshot: QueueStore.Snapshot, readSince: ContinuousClock.Instant) {
        for app in apps where isDue(app, snapshot) || claimsDue(app, snapshot, readSince: readSince) { start(app) }
    }

    /// How long until the oldest waiting batch is due, claims are to be settled again, or a failed delivery may be
    /// tried again, at most `limit`.
    func nextDeadline(within limit: Duration) -> Duration {
        let now = ContinuousClock.now
        // A retry time past is no deadline: the wait it asked for is over, and a failed delivery is started again
        // when it is due, like any other.
        let (oldest, claims, retry) = state.withLock {
            ($0.pendingSince.values.min(), $0.claimsCheckedAt.values.min(),
             $0.failures.values.map(\.retryAt).filter { $0 > now }.min())
        }
        var next = limit
        if let oldest { next = min(next, oldest + context.settings.deliveryDelay - now) }
        if let claims { next = min(next, claims + Self.claimCheckInterval - now) }
        if let retry { next = min(next, retry - now) }
        return max(.zero, next)
    }

    /// Whether the engine drains (`bahost run`, `bahost resume`) rather than serves.
    func setDraining(_ draining: Bool) {
        state.withLock { $0.draining = draining }
    }

    /// The app's completions are no longer waited for by a drain: its last `attemptsBeforeLeavingPending`
    /// deliveries failed in a row. Returns the last error, or nil.
    func leftPending(_ appIdentifier: String) -> String? {
        state.withLock { state in
            guard state.draining, let failure = state.failures[appIdentifier],
                failure.count >= Self.attemptsBeforeLeavingPending
            else { return nil }
            return failure.error
        }
    }

    /// Whether an app's claimed completions are to be settled now: at once the first time they are seen (the
    /// claims a killed service left), then every `claimCheckInterval`.
    private func claimsDue(
        _ appIdentifier: String, _ snapshot: QueueStore.Snapshot, readSince: ContinuousClock.Instant
    ) -> Bool {
        state.withLock { state in
            // Claims read before the app's last delivery ended may be its window's own, settled since: a delivery
            // started for them would only be a small batch of what is pending.
            if let ended = state.deliveryEnded[appIdentifier], ended > readSince { return false }
            guard snapshot.appsWithClaimedCompletions.contains(appIdentifier) else {
                state.claimsCheckedAt.removeValue(forKey: appIdentifier)
                return false
            }
            guard let last = state.claimsCheckedAt[appIdentifier] else { return true }
            return ContinuousClock.now - last >= Self.claimCheckInterval
        }
    }

    /// The app was removed: nothing of it waits any longer.
    func forget(_ appIdentifier: String) {
        state.withLock {
            _ = $0.pendingSince.removeValue(forKey: appIdentifier)
            _ = $0.claimsCheckedAt.removeValue(forKey: appIdentifier)
            _ = $0.paces.removeValue(forKey: appIdentifier)
            _ = $0.deliveryEnded.removeValue(forKey: appIdentifier)
            _ = $0.failures.removeValue(forKey: appIdentifier)
        }
    }

    /// Waits for the deliveries in progress: a window runs to its end (its budget bounds it), so that what it
    /// delivered is recorded.
    func shutdown() async {
        for task in state.withLock({ Array($0.deliveries.values) }) { await task.value }
    }

    private func isDue(_ appIdentifier: String, _ snapshot: QueueStore.Snapshot) -> Bool {
        let pending = snapshot.pendingCompletions[appIdentifier, default: 0]
        guard pending > 0 else {
            state.withLock { _ = $0.pendingSince.removeValue(forKey: appIdentifier) }
            return false
        }
        if context.delegates?.hasDelegate(appIdentifier) == true || isManaged(appIdentifier) { return true }
        let batch = state.withLock { $0.paces[appIdentifier, default: BatchPace()].size }
        if pending >= batch || !snapshot.appsWithActiveDownloads.contains(appIdentifier) {
            return true
        }
        let since = state.withLock { state in
            if state.pendingSince[appIdentifier] == nil { state.pendingSince[appIdentifier] = .now }
            return state.pendingSince[appIdentifier]!
        }
        return ContinuousClock.now - since >= context.settings.deliveryDelay
    }

    private func start(_ appIdentifier: String) {
        state.withLock { state in
            guard state.deliveries[appIdentifier] == nil else { return }
            if let failure = state.failures[appIdentifier], ContinuousClock.now < failure.retryAt { return }
            state.deliveries[appIdentifier] = Task {
                var failed: (error: String, retryIn: Duration?)?
                do {
                    try await self.deliver(appIdentifier)
                } catch {
                    // What the delivery claimed it records before a window opens, so its completions stay pending,
                    // to be delivered again; not at once, since what failed (a full disk?) may take a while.
                    failed = ("\(error)".printable(), nil)
                }
                self.state.withLock { state in
                    state.deliveries.removeValue(forKey: appIdentifier)
                    state.deliveryEnded[appIdentifier] = .now
                    guard let error = failed?.error else {
                        state.failures.removeValue(forKey: appIdentifier)
                        return
                    }
                    let count = (state.failures[appIdentifier]?.count ?? 0) + 1
                    let delay = Self.retryDelay(afterFailures: count)
                    state.failures[appIdentifier] = Failure(count: count, error: error, retryAt: .now + delay)
                    // A drain's last try: it stops waiting instead (`leftPending`).
                    failed?.retryIn = state.draining && count >= Self.attemptsBeforeLeavingPending ? nil : delay
                }
                if let failed {
                    self.context.observe(.deliveryFailed(appIdentifier: appIdentifier, failed.error, retryIn: failed.retryIn))
                }
                self.context.signal.fire()
            }
        }
    }

    private func deliver(_ appIdentifier: String) async throws {
        let store = context.store
        guard let app = try store.app(appIdentifier) else { return }
        state.withLock { _ = $0.pendingSince.removeValue(forKey: appIdentifier) }
        if app.hasManagedAssetPacks {
            let packs = ManagedPacks(context: context)
            let discarded = try await WindowLauncher.onWindowThread { try packs.installFinished(appIdentifier) }
            // An essential pack counts for launch once installed.
            context.transferEnded.fire()
            try context.announceLaunchIfReady(appIdentifier)
            try await WindowLauncher.onWindowThread { discarded.forEach { try? FileManager.default.removeItem(at: $0) } }
        }
        let deliveries = context.dataRoot.deliveries(for: app.appGroupIdentifier)
        let settlement = try ClaimSettlement.settle(store, appIdentifier: appIdentifier, deliveries: deliveries)
        state.withLock { state in
            if settlement.inFlight > 0 { state.claimsCheckedAt[appIdentifier] = .now }
            else { state.claimsCheckedAt.removeValue(forKey: appIdentifier) }
        }
        for (completion, claim) in settlement.delivered {
            context.observe(claim == .window ? .delivered(completion.status) : .deliveredToApp(completion.status))
        }
        if let delegates = context.delegates, let pid = delegates.delegateProcess(appIdentifier),
            let process = ProcessStamp(pid: pid)
        {
            let outcome = try await DelegateDelivery(store: store, deliveries: deliveries).offer(
                appIdentifier, to: process, send: { await delegates.offer($0, of: appIdentifier, to: pid) },
                delivered: { context.observe(.deliveredToApp($0.status)) })
            switch outcome {
            case .declinedSome: break
            case .done: return
            case .waiting:
                state.withLock { $0.claimsCheckedAt[appIdentifier] = .now }
                return
            }
        }
        let limits = context.settings.limits
        let delivery = ExtensionDelivery(
            store: store, deliveries: deliveries,
            batchSize: state.withLock { $0.paces[appIdentifier, default: BatchPace()].size })
        guard let batch = try delivery.claimBatch(for: appIdentifier) else { return }
        let purpose = WindowPurpose.completions(batch.events.count)
        let outcome = try await WindowLauncher(context: context).open(app, for: purpose, batch.events)
        let report = try delivery.settle(batch, outcome: outcome)
        state.withLock {
            $0.paces[appIdentifier, default: BatchPace()].record(
                outcome.stopReason, elapsed: outcome.elapsed, completed: outcome.completedEvents, limits: limits)
        }
        report.delivered.forEach { context.observe(.delivered($0.status)) }
        report.abandoned.forEach { context.observe(.abandoned($0.status)) }
    }
}
