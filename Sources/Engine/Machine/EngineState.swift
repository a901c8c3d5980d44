import Delivery
import ExtensionRuntime
import Policy
import Queue
import Transfer
import Vocabulary

/// The engine's state as one value: the transfer slots and their reserve (`TransferSlots`), what each download the
/// slots may start needs, the outcomes waiting for the next turn to record them, the challenges being asked about,
/// and each app's deliveries (`AppDelivery`). Events come in (`handle`) and actions go out; no I/O, no clock (an event
/// that needs the time carries it), no lock, no thread. `EngineDriver` holds it under its lock, feeds it every event
/// and performs the actions outside the lock; the tests drive it directly.
///
/// The rules it keeps, each by construction:
/// - a download starts only through an action of this value, and once (`TransferSlots.add`);
/// - a turn's starts and its reserve are put in place in the same event (`turnWritten`): a transfer that ends the
///   moment it started finds its successor in this turn's reserve;
/// - every queue write is an action: the turn's (`writeTurn`, which takes the outcomes waiting and the downloads
///   started from the reserve), progress (`save`, only while the download still runs and was not cancelled), an
///   allowance's charge (`charge`);
/// - an outcome is told, and its completion delivered, only once the turn that recorded it committed
///   (`turnWritten`); an outcome whose row was cancelled meanwhile has its files deleted instead;
/// - one delivery runs per app at a time, when it is due (`AppDelivery`: at once to a receiver that takes them so,
///   else in batches), and a failed one waits its backoff.
struct EngineState: Sendable {
    /// A download the slots may start, with what its transfer needs.
    struct Chosen: Sendable {
        var download: QueuedDownload
        var app: AppRecord
        /// `app.policy`, made once a turn for all of the app's transfers.
        var policy: AppPolicy

        init(_ download: QueuedDownload, app: AppRecord, policy: AppPolicy) {
            self.download = download
            self.app = app
            self.policy = policy
        }
    }

    enum Event: Sendable {
        /// A turn is about to write: it takes the outcomes waiting and the downloads started from the reserve.
        case turnBegins
        /// The turn's transaction committed: `recorded` (what `turnBegins` gave it; `gone`, those whose row was
        /// cancelled meanwhile), `started` marked moving, `reserve` chosen beyond the free slots (replacing the
        /// last turn's).
        case turnWritten(recorded: [TransferOutcome], gone: Set<String>, started: [Chosen], reserve: [Chosen])
        /// The turn's transaction failed: the outcomes it took stay unrecorded (their rows stay marked moving, and
        /// are queued again once nothing runs).
        case turnFailed(recorded: [TransferOutcome], error: String)
        /// A transfer's body ended: its slot may go to the next reserved download that fits `limits`.
        case bodyEnded(String, limits: SlotLimits)
        /// A transfer's task ended, with how its attempt ended (nil: nothing is left to record).
        case transferEnded(String, TransferJob.Ending?)
        /// A challenge was answered: `outcome` is the row queued again with the credentials given, or the 401 as
        /// final.
        case challengeAnswered(String, TransferOutcome)
        /// A download was cancelled (its row is gone): reserved, it is dropped; running, its task is stopped.
        case cancelled(String)
        /// A running transfer's progress is due to be made durable (`ProgressRecorder` says when).
        case progressed(QueuedDownload)
        /// The reserve no longer holds: the conditions it was chosen under changed, or the engine stops.
        case reserveDropped

        /// A turn recorded a completion of the app's, at `at`; `atOnce` when a receiver takes it now (a running
        /// delegate, the host's pack installer) rather than in the extension's next batch.
        case completionRecorded(String, atOnce: Bool, at: ContinuousClock.Instant)
        /// The loop read the queue, at `readSince` or later: what it says of each app (`queue`), and whether a
        /// receiver holds claims (`claimsHeld`); completions wait `delay` for a batch.
        case queueRead(
            [String: (queue: AppDelivery.Queue, claimsHeld: Bool)], readSince: ContinuousClock.Instant,
            delay: Duration, at: ContinuousClock.Instant)
        /// A delivery began: what waited for a batch goes with it.
        case deliveryBegan(String)
        /// A delivery settled the claims receivers left: some still held (to look at again), or none.
        case claimsSettled(String, stillHeld: Bool, at: ContinuousClock.Instant)
        /// The extension's window of a delivery ended so: its pace sets the next batch's size.
        case windowEnded(String, StopReason, elapsed: Duration, completed: Int, limits: WindowLimits)
        /// A delivery ended, well or with `error`.
        case deliveryEnded(String, error: String?, at: ContinuousClock.Instant)
        /// The app was removed: nothing of it waits any longer (a delivery running ends on its own).
        case appRemoved(String)
        /// A drain (`bahost run`, `resume`) runs, which stops waiting after failures, or the service (which keeps
        /// trying).
        case draining(Bool)
    }

    enum Action: Sendable {
        /// Start the transfer of a download now recorded running.
        case start(Chosen)
        /// Cancel a running download's task.
        case cancelTask(String)
        /// Post to the engine's events.
        case wake(EngineEvents.Kinds)
        /// Write the turn: record these outcomes, mark these started from the reserve moving, read the queue and
        /// mark what it chooses moving, in one transaction; then say how it went (`turnWritten`, `turnFailed`).
        case writeTurn(outcomes: [TransferOutcome], startedEarly: [QueuedDownload])
        /// Ask the app's delegate, else its extension, about a challenge; then say what came (`challengeAnswered`).
        case ask(ServerChallenge, row: QueuedDownload, otherwise: TransferOutcome)
        /// Save a running download's row (its progress, its validator).
        case save(QueuedDownload)
        /// Charge an app's allowance what a download received beyond its declared size.
        case charge(appIdentifier: String, bytes: Int64, essential: Bool)
        /// Delete what a transfer of a cancelled download left.
        case discardFiles(partialPath: String, finishedPath: String)
        /// Tell the observer.
        case tell(LifecycleEvent)
        /// A completion of the app's was recorded: say whether a receiver takes it at once (`completionRecorded`).
        case recorded(appIdentifier: String)
        /// These apps' downloads ended: open the launch gate of those whose essential downloads are all done.
        case announceLaunchIfReady(Set<String>)
        /// Start a delivery of the app's completions, of at most `batchSize` for the extension; then say how it went
        /// (`deliveryBegan`, `claimsSettled`, `windowEnded`, `deliveryEnded`).
        case startDelivery(String, batchSize: Int)
    }

    private(set) var slots = TransferSlots()
    /// What each download the last turn chose needs, by unique identifier: its reserve's, until they start or the
    /// next turn replaces them.
    private var chosen: [String: Chosen] = [:]
    /// Outcomes of transfers that ended, oldest first, waiting for the next turn to record them.
    private(set) var outcomes: [TransferOutcome] = []
    /// Downloads whose challenge is being asked about.
    private(set) var challenges: Set<String> = []
    /// Each app's deliveries: its phase, its failures, its claims, its pace.
    private(set) var deliveries: [String: AppDelivery] = [:]
    /// Whether a drain runs (it stops waiting for completions whose deliveries keep failing; the service never does).
    private(set) var draining = false

    /// Whether nothing runs: no transfer, no challenge being asked about, no delivery.
    var isIdle: Bool { slots.entries.isEmpty && challenges.isEmpty && !isDelivering }
    var isDelivering: Bool { deliveries.values.contains { $0.delivering } }

    /// The app's completions are no longer waited for by a drain: its last deliveries failed in a row. The last
    /// error, or nil.
    func leftPending(_ appIdentifier: String) -> String? {
        deliveries[appIdentifier]?.leftPending(draining: draining)
    }

    /// When, after `now`, a waiting batch is due, claims are to be settled again, or a failed delivery may be
    /// tried again: the earliest, or nil.
    func nextDeliveryDeadline(delay: Duration, at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        deliveries.values.compactMap { $0.nextDeadline(delay: delay, at: now) }.min()
    }

    /// Takes an event and returns what to do, in order.
    mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .turnBegins:
            // Those started early first: an outcome taken here implies its start was taken here or before.
            let startedEarly = slots.takeStartedEarly()
            defer { outcomes = [] }
            return [.writeTurn(outcomes: outcomes, startedEarly: startedEarly)]

        case .turnWritten(let recorded, let gone, let started, let reserve):
            var actions = Self.told(recorded, gone: gone)
            chosen = Dictionary(
                (started + reserve).map { ($0.download.uniqueIdentifier, $0) }, uniquingKeysWith: { $1 })
            let chose = TransferSlots.Event.turnChose(
                started: started.map(\.download), reserve: reserve.map(\.download))
            actions += slots.handle(chose).compactMap { resolve($0) }
            return actions

        case .turnFailed(let recorded, let error):
            guard !recorded.isEmpty else { return [] }
            let failed = LifecycleEvent.queueFailed("recording \(recorded.count) transfers' outcomes: \(error)")
            return [.tell(failed), .wake(.transferEnded)]

        case .bodyEnded(let uniqueIdentifier, let limits):
            return slots.handle(.bodyEnded(uniqueIdentifier, limits: limits)).compactMap { resolve($0) }

        case .transferEnded(let uniqueIdentifier, let ending):
            _ = slots.handle(.taskEnded(uniqueIdentifier))
            switch ending {
            case .outcome(let outcome)?:
                outcomes.append(outcome)
                let row = outcome.row
                let charge = outcome.charge.map {
                    Action.charge(appIdentifier: row.appIdentifier, bytes: $0, essential: row.isEssential)
                }
                return (charge.map { [$0] } ?? []) + [.wake(.queueChanged)]
            case .challenged(let challenge, let row, let otherwise)?:
                // Handed over before the transfer counts as ended, so that the engine never sees neither at work.
                challenges.insert(uniqueIdentifier)
                return [.ask(challenge, row: row, otherwise: otherwise), .wake(.queueChanged)]
            case nil:
                return [.wake([.queueChanged, .transferEnded])]
            }

        case .challengeAnswered(let uniqueIdentifier, let outcome):
            guard challenges.remove(uniqueIdentifier) != nil else { return [] }
            outcomes.append(outcome)
            return [.wake(.queueChanged)]

        case .cancelled(let uniqueIdentifier):
            chosen[uniqueIdentifier] = nil
            return slots.handle(.cancelled(uniqueIdentifier)).compactMap { resolve($0) }

        case .progressed(let row):
            // A cancelled download's row is gone: nothing of it is written again.
            guard let entry = slots.entries[row.uniqueIdentifier], !entry.cancelled else { return [] }
            return [.save(row)]

        case .reserveDropped:
            slots.dropReserve()
            return []

        case .completionRecorded(let app, let atOnce, let now):
            deliveries[app, default: AppDelivery()].recorded(at: now)
            return atOnce ? startDelivery(app, at: now) : []

        case .queueRead(let apps, let readSince, let delay, let now):
            var actions: [Action] = []
            for (app, read) in apps.sorted(by: { $0.key < $1.key }) {
                var delivery = deliveries[app, default: AppDelivery()]
                let isDue = delivery.isDue(read.queue, delay: delay, at: now)
                let claimsDue = delivery.claimsDue(held: read.claimsHeld, readSince: readSince, at: now)
                deliveries[app] = delivery
                if claimsDue || isDue { actions += startDelivery(app, at: now) }
            }
            return actions

        case .deliveryBegan(let app):
            deliveries[app]?.deliveryStarted()
            return []

        case .claimsSettled(let app, let stillHeld, let now):
            deliveries[app]?.claimsSettled(stillHeld: stillHeld, at: now)
            return []

        case .windowEnded(let app, let stopReason, let elapsed, let completed, let limits):
            deliveries[app]?.pace.record(stopReason, elapsed: elapsed, completed: completed, limits: limits)
            return []

        case .deliveryEnded(let app, let error, let now):
            let ended = deliveries[app, default: AppDelivery()].ended(error: error, draining: draining, at: now)
            guard let error else { return [.wake(.queueChanged)] }
            // What the delivery claimed it records before a window opens, so its completions stay pending, to be
            // delivered again; not at once, since what failed (a full disk?) may take a while.
            let retryIn: Duration? = if case .retry(let delay) = ended { delay } else { nil }
            return [.tell(.deliveryFailed(appIdentifier: app, error, retryIn: retryIn)), .wake(.queueChanged)]

        case .appRemoved(let app):
            let running = deliveries[app]?.delivering ?? false
            deliveries[app] = running ? AppDelivery(delivering: true) : nil
            return []

        case .draining(let draining):
            self.draining = draining
            return []
        }
    }

    /// Starts a delivery of the app's, unless one runs or a failure asks to wait.
    private mutating func startDelivery(_ app: String, at now: ContinuousClock.Instant) -> [Action] {
        guard deliveries[app, default: AppDelivery()].mayStart(at: now) else { return [] }
        deliveries[app]!.delivering = true
        return [.startDelivery(app, batchSize: deliveries[app]!.pace.size)]
    }

    /// The slots' actions, made concrete: a start with what its transfer needs, a wake with its kinds.
    private mutating func resolve(_ action: TransferSlots.Action) -> Action? {
        switch action {
        case .start(let download):
            // Every download a turn chose comes with what it needs (`turnWritten`).
            guard var start = chosen.removeValue(forKey: download.uniqueIdentifier) else { return nil }
            start.download = download
            return .start(start)
        case .cancelTask(let uniqueIdentifier):
            return .cancelTask(uniqueIdentifier)
        case .wake(let reserveLow):
            return .wake(reserveLow ? [.queueChanged, .reserveLow] : .queueChanged)
        }
    }

    /// What follows a turn's record of `outcomes`: the files of those whose row was gone deleted, the others told,
    /// their completions delivered, their apps' launch gates looked at.
    private static func told(_ outcomes: [TransferOutcome], gone: Set<String>) -> [Action] {
        guard !outcomes.isEmpty else { return [] }
        var actions: [Action] = []
        var apps = Set<String>()
        for outcome in outcomes {
            let row = outcome.row
            if gone.contains(row.uniqueIdentifier) {
                actions.append(.discardFiles(partialPath: outcome.partialPath, finishedPath: outcome.finishedPath))
                continue
            }
            if let event = outcome.event { actions.append(.tell(event)) }
            if outcome.completes { actions.append(.recorded(appIdentifier: row.appIdentifier)) }
            apps.insert(row.appIdentifier)
        }
        if !apps.isEmpty { actions.append(.announceLaunchIfReady(apps)) }
        return actions + [.wake(.transferEnded)]
    }
}
