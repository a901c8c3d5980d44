import Delivery
import ExtensionRuntime
import Foundation
import HostVocabulary
import Queue
import Transfer
import Vocabulary

/// One delivery of an app's completions, once the engine's state said it is due (`EngineState`'s `startDelivery`):
/// a managed app's asset packs to the host's own installer (`ManagedPacks`), then the rest to the running app's
/// delegate when it has one, else to the extension, woken in a window for a batch. The exactly-once rule itself
/// (claims, offers, settling, redelivery) is Delivery's; *when* a delivery runs, one per app at a time, and how a
/// failed one backs off, is the state's (`AppDelivery`). What this learns on the way (the claims still held, the
/// window's pace) it reports as events. [a task of the driver's, one per app at a time]
struct CompletionDelivery {
    let store: QueueStore
    let dataRoot: DataRoot
    /// The running apps' delegates, which get completions before the extension.
    let delegates: AppDelegateRouter?
    /// A managed app's packs, installed by the host.
    let packs: ManagedPacks
    let windows: WindowLauncher
    let blocking: BlockingPool
    let launchGate: LaunchGate
    /// What hears of a pack installed (`transferEnded`, for the drains of essential downloads).
    let events: EngineEvents
    let observe: LifecycleObserver
    /// Hands the engine's state what the delivery learned.
    let report: @Sendable (EngineState.Event) -> Void

    /// Delivers what is pending for `appIdentifier`, at most `batchSize` completions to the extension's window.
    func deliver(_ appIdentifier: String, batchSize: Int) async throws {
        guard let app = try store.app(appIdentifier) else { return }
        report(.deliveryBegan(appIdentifier))
        if app.hasManagedAssetPacks {
            let discarded = try await blocking.run { try packs.installFinished(appIdentifier) }
            // An essential pack counts for launch once installed.
            events.post(.transferEnded)
            try launchGate.announceIfReady(appIdentifier)
            try await blocking.run { discarded.forEach { try? FileManager.default.removeItem(at: $0) } }
        }
        let deliveries = dataRoot.deliveries(for: app.appGroupIdentifier)
        let settlement = try ClaimSettlement.settle(store, appIdentifier: appIdentifier, deliveries: deliveries)
        report(.claimsSettled(appIdentifier, stillHeld: settlement.inFlight > 0, at: .now))
        for (completion, claim) in settlement.delivered {
            observe(claim == .window ? .delivered(completion.status) : .deliveredToApp(completion.status))
        }
        if let delegates = delegates, let pid = delegates.delegateProcess(appIdentifier),
            let process = ProcessStamp(pid: pid)
        {
            let outcome = try await DelegateDelivery(store: store, deliveries: deliveries).offer(
                appIdentifier, to: process, send: { await delegates.offer($0, of: appIdentifier, to: pid) },
                delivered: { observe(.deliveredToApp($0.status)) })
            switch outcome {
            case .declinedSome: break
            case .done: return
            case .waiting:
                report(.claimsSettled(appIdentifier, stillHeld: true, at: .now))
                return
            }
        }
        let delivery = ExtensionDelivery(store: store, deliveries: deliveries, batchSize: batchSize)
        guard let batch = try delivery.claimBatch(for: appIdentifier) else { return }
        let purpose = WindowPurpose.completions(batch.events.count)
        let outcome = try await windows.open(app, for: purpose, batch.events)
        let settled = try delivery.settle(batch, outcome: outcome)
        report(.windowEnded(
            appIdentifier, outcome.stopReason, elapsed: outcome.elapsed, completed: outcome.completedEvents,
            limits: windows.limits))
        settled.delivered.forEach { observe(.delivered($0.status)) }
        settled.abandoned.forEach { observe(.abandoned($0.status)) }
    }

    /// Whether the app's completions go at once rather than in the extension's batches: it has a running delegate,
    /// or it is a managed app (its completions are its packs, installed by the host).
    static func receivesAtOnce(_ appIdentifier: String, delegates: AppDelegateRouter?, store: QueueStore) -> Bool {
        delegates?.hasDelegate(appIdentifier) == true
            || (try? store.app(appIdentifier))??.hasManagedAssetPacks == true
    }
}
