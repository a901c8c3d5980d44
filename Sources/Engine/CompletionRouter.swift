import Delivery
import ExtensionRuntime
import Foundation
import Queue
import Synchronization

/// Delivers each finished or failed download exactly once: a managed app's asset packs to the host's own installer
/// (`ManagedPacks`), then the rest to the running app's delegate when it has one (at once, each counted delivered
/// when the method returned), else to the extension, woken in a window for a batch.
/// For the extension, completions go out when the app's transfers are done, when a batch is full, or when the
/// oldest has waited `deliveryDelay`. One delivery runs per app at a time: a slow extension window or delegate
/// holds up only its own app.
final class CompletionRouter: Sendable {
    private let context: EngineContext
    private let state = Mutex(State())

    private struct State {
        /// Deliveries in progress, one per app.
        var deliveries: [String: Task<Void, Never>] = [:]
        /// When an app's oldest undelivered completion appeared.
        var pendingSince: [String: ContinuousClock.Instant] = [:]
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

    /// Starts the deliveries that are due, given the queue as the scheduler read it.
    func deliverDue(_ apps: Set<String>, _ snapshot: QueueStore.Snapshot) {
        for app in apps where isDue(app, snapshot) { start(app) }
    }

    /// How long until the oldest waiting batch is due, at most `limit`.
    func nextDeadline(within limit: Duration) -> Duration {
        guard let oldest = state.withLock({ $0.pendingSince.values.min() }) else { return limit }
        return min(limit, max(.zero, oldest + context.settings.deliveryDelay - ContinuousClock.now))
    }

    /// The app was removed: nothing of it waits any longer.
    func forget(_ appIdentifier: String) {
        state.withLock { _ = $0.pendingSince.removeValue(forKey: appIdentifier) }
    }

    /// Waits for the deliveries in progress: a window runs to its end (its budget bounds it), so that what it
    /// delivered is recorded.
    func shutdown() async {
        for task in state.withLock({ Array($0.deliveries.values) }) { await task.value }
    }

    private func isDue(_ appIdentifier: String, _ snapshot: QueueStore.Snapshot) -> Bool {
        let pending = snapshot.pendingCompletions[appIdentifier, default: 0]
        guard pending > 0 else {
            forget(appIdentifier)
            return false
        }
        if context.delegates?.hasDelegate(appIdentifier) == true || isManaged(appIdentifier) { return true }
        if pending >= CompletionDelivery.defaultBatchSize || !snapshot.appsWithActiveDownloads.contains(appIdentifier) {
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
            state.deliveries[appIdentifier] = Task {
                do {
                    try await self.deliver(appIdentifier)
                } catch {
                    // The queue could not record a delivery: it stays pending, to be delivered again, not at once.
                    self.context.observe(.queueFailed("delivering to \(appIdentifier): \(error)"))
                    try? await Task.sleep(for: .seconds(1))
                }
                self.state.withLock { _ = $0.deliveries.removeValue(forKey: appIdentifier) }
                self.context.signal.fire()
            }
        }
    }

    private func deliver(_ appIdentifier: String) async throws {
        let store = context.store
        guard let app = try store.app(appIdentifier) else { return }
        forget(appIdentifier)
        if app.hasManagedAssetPacks {
            let packs = ManagedPacks(context: context)
            try await onWindowThread { try packs.installFinished(appIdentifier) }
            // An essential pack counts for launch once installed.
            context.transferEnded.fire()
            try context.announceLaunchIfReady(appIdentifier)
        }
        if let delegates = context.delegates, delegates.hasDelegate(appIdentifier) {
            var declined = false
            for var completion in try store.pendingCompletions(for: appIdentifier) {
                guard await delegates.offer(completion) else {
                    declined = true
                    continue
                }
                // Delivered: a file the delegate left where it was is deleted, as Apple does.
                if let path = completion.filePath { unlink(path) }
                completion.filePath = nil
                completion.delivered = true
                try store.save(completion)
                context.observe(.deliveredToApp(completion))
            }
            // What the app's delegate did not handle (it lacks the method) wakes the extension now.
            guard declined else { return }
        }
        let delivery = CompletionDelivery(
            store: store, limits: context.settings.limits, appGroup: context.dataRoot.appGroup(of: app))
        let services = AppDownloads(context: context, appIdentifier: appIdentifier)
        guard let report = try await onWindowThread({ try delivery.deliverBatch(for: app, services: services) })
        else { return }
        context.observe(.window(
            .completions(report.delivered.count + report.abandoned.count), report.outcome, appIdentifier: appIdentifier))
        report.delivered.forEach { context.observe(.delivered($0)) }
        report.abandoned.forEach { context.observe(.abandoned($0)) }
    }
}
