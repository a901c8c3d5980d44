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
/// `AppDelivery.claimCheckInterval` until its ticket is gone (delivered) or the process is (released). A delivery
/// that fails (the queue, the disk or the container's folder refused it) is tried again after a wait that doubles
/// with each failure in a row (`AppDelivery.retryDelay`); the completions stay pending meanwhile, and a drain stops
/// waiting for them after `AppDelivery.attemptsBeforeLeavingPending` failures in a row (`leftPending`).
final class CompletionRouter: Sendable {
    private let context: EngineContext
    private let state = Mutex(State())

    private struct State {
        /// Each app's deliveries: its phase, its failures, its claims, its pace (`AppDelivery`).
        var apps: [String: AppDelivery] = [:]
        /// Whether a drain runs, which stops waiting after `AppDelivery.attemptsBeforeLeavingPending` failures (the
        /// service keeps trying).
        var draining = false
    }

    init(context: EngineContext) {
        self.context = context
    }

    var isIdle: Bool { state.withLock { !$0.apps.values.contains { $0.delivery != nil } } }

    /// A completion was recorded: a running app's delegate gets it now, without waiting for the loop's next turn;
    /// for the extension it waits to be batched. [engine loop: the turn that recorded it]
    func recorded(_ appIdentifier: String) {
        state.withLock { $0.apps[appIdentifier, default: AppDelivery()].recorded(at: .now) }
        if receivesAtOnce(appIdentifier) { start(appIdentifier) }
    }

    /// A running delegate, or a managed app (its completions are its packs, installed by the host at once).
    private func receivesAtOnce(_ appIdentifier: String) -> Bool {
        context.delegates?.hasDelegate(appIdentifier) == true
            || (try? context.store.app(appIdentifier))??.hasManagedAssetPacks == true
    }

    /// Starts the deliveries that are due, given the queue as the turn read it (at `readSince` or later).
    /// [engine loop]
    func deliverDue(_ apps: Set<String>, _ snapshot: QueueStore.Snapshot, readSince: ContinuousClock.Instant) {
        for app in apps {
            let pending = snapshot.pendingCompletions[app, default: 0]
            // Asked only when something is pending: it reads the app's row.
            let atOnce = pending > 0 && receivesAtOnce(app)
            let queue = AppDelivery.Queue(
                pendingCompletions: pending, hasActiveDownloads: snapshot.appsWithActiveDownloads.contains(app),
                receivesAtOnce: atOnce)
            let held = snapshot.appsWithClaimedCompletions.contains(app)
            let due = state.withLock { state in
                let now = ContinuousClock.now
                var delivery = state.apps[app, default: AppDelivery()]
                defer { state.apps[app] = delivery }
                let isDue = delivery.isDue(queue, delay: context.settings.deliveryDelay, at: now)
                return delivery.claimsDue(held: held, readSince: readSince, at: now) || isDue
            }
            if due { start(app) }
        }
    }

    /// How long until the oldest waiting batch is due, claims are to be settled again, or a failed delivery may be
    /// tried again, at most `limit`. [engine loop]
    func nextDeadline(within limit: Duration) -> Duration {
        let now = ContinuousClock.now
        let delay = context.settings.deliveryDelay
        let next = state.withLock { $0.apps.values.compactMap { $0.nextDeadline(delay: delay, at: now) }.min() }
        return max(.zero, min(limit, next.map { $0 - now } ?? limit))
    }

    /// Whether the engine drains (`bahost run`, `bahost resume`) rather than serves.
    func setDraining(_ draining: Bool) {
        state.withLock { $0.draining = draining }
    }

    /// The app's completions are no longer waited for by a drain: its last `AppDelivery.attemptsBeforeLeavingPending`
    /// deliveries failed in a row. Returns the last error, or nil. [any thread]
    func leftPending(_ appIdentifier: String) -> String? {
        state.withLock { $0.apps[appIdentifier]?.leftPending(draining: $0.draining) }
    }

    /// The app was removed: nothing of it waits any longer (a delivery running ends on its own). [any thread]
    func forget(_ appIdentifier: String) {
        state.withLock { state in
            let running = state.apps[appIdentifier]?.delivery
            state.apps[appIdentifier] = running.map { AppDelivery(delivery: $0) }
        }
    }

    /// Waits for the deliveries in progress: a window runs to its end (its budget bounds it), so that what it
    /// delivered is recorded. [engine loop's caller, once the loop ended]
    func shutdown() async {
        for task in state.withLock({ $0.apps.values.compactMap(\.delivery) }) { await task.value }
    }

    private func start(_ appIdentifier: String) {
        state.withLock { state in
            guard state.apps[appIdentifier, default: AppDelivery()].mayStart(at: .now) else { return }
            state.apps[appIdentifier]!.delivery = Task {
                var failed: String?
                do {
                    try await self.deliver(appIdentifier)
                } catch {
                    // What the delivery claimed it records before a window opens, so its completions stay pending,
                    // to be delivered again; not at once, since what failed (a full disk?) may take a while.
                    failed = "\(error)".printable()
                }
                let ended = self.state.withLock { state in
                    state.apps[appIdentifier, default: AppDelivery()].ended(
                        error: failed, draining: state.draining, at: .now)
                }
                if let failed {
                    let retryIn: Duration? = if case .retry(let delay) = ended { delay } else { nil }
                    self.context.observe(.deliveryFailed(appIdentifier: appIdentifier, failed, retryIn: retryIn))
                }
                self.context.events.post(.queueChanged)
            }
        }
    }

    private func deliver(_ appIdentifier: String) async throws {
        let store = context.store
        guard let app = try store.app(appIdentifier) else { return }
        state.withLock { $0.apps[appIdentifier]?.deliveryStarted() }
        if app.hasManagedAssetPacks {
            let packs = ManagedPacks(context: context)
            let discarded = try await context.blocking.run { try packs.installFinished(appIdentifier) }
            // An essential pack counts for launch once installed.
            context.events.post(.transferEnded)
            try context.announceLaunchIfReady(appIdentifier)
            try await context.blocking.run { discarded.forEach { try? FileManager.default.removeItem(at: $0) } }
        }
        let deliveries = context.dataRoot.deliveries(for: app.appGroupIdentifier)
        let settlement = try ClaimSettlement.settle(store, appIdentifier: appIdentifier, deliveries: deliveries)
        state.withLock { $0.apps[appIdentifier]?.claimsSettled(stillHeld: settlement.inFlight > 0, at: .now) }
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
                state.withLock { $0.apps[appIdentifier]?.claimsSettled(stillHeld: true, at: .now) }
                return
            }
        }
        let limits = context.settings.limits
        let delivery = ExtensionDelivery(
            store: store, deliveries: deliveries,
            batchSize: state.withLock { $0.apps[appIdentifier]?.pace.size ?? BatchPace.first })
        guard let batch = try delivery.claimBatch(for: appIdentifier) else { return }
        let purpose = WindowPurpose.completions(batch.events.count)
        let outcome = try await WindowLauncher(context: context).open(app, for: purpose, batch.events)
        let report = try delivery.settle(batch, outcome: outcome)
        state.withLock {
            $0.apps[appIdentifier]?.pace.record(
                outcome.stopReason, elapsed: outcome.elapsed, completed: outcome.completedEvents, limits: limits)
        }
        report.delivered.forEach { context.observe(.delivered($0.status)) }
        report.abandoned.forEach { context.observe(.abandoned($0.status)) }
    }
}
