import Delivery
import Foundation
import HostVocabulary
import Policy
import Queue
import Synchronization
import Transfer

/// The engine's one driver: every event goes through `send`, which hands it to the engine's state (`EngineState`)
/// under one lock and performs the actions it returns outside the lock. It is the only place a transfer starts, a
/// task is cancelled, or the queue is written for the transfers (the turn, progress, a charge).
///
/// Who sends: the engine's loop (a turn: `turn`; the queue as it read it: `deliverDue`), the transfer threads (a
/// body's end, which starts the next reserved download without a thread hop: docs/performance/DECISIONS.md #12), the
/// transfers' tasks on the blocking pool (progress, their end), the tasks that ask about a challenge or deliver, and
/// the apps' calls (a cancel). Each method says where it runs.
///
/// A turn (`turn`) takes the outcomes waiting and the downloads started from the reserve, records them, reads the
/// queue and marks moving what its `TurnChoice` (a value: the limits, the slots taken, the reserve's room) picks, in
/// one transaction (`QueueStore.turn`); then the state tells the outcomes and starts what was chosen, and reserves
/// what it chose beyond the free slots (up to `reserveDepth` times the limit), started the moment a body ends.
final class EngineDriver: Sendable {
    private let store: QueueStore
    private let dataRoot: DataRoot
    /// The limits of the slots and the windows, the deliveries' delay, the turns' pace.
    private let settings: HostEngine.Settings
    private let observe: LifecycleObserver
    /// What the driver wakes (the loop, the drains), and what the paced wait for a turn waits on.
    private let events: EngineEvents
    private let launchGate: LaunchGate
    /// The hosts found with no path, woken at a turn; the machine's conditions a turn judges by.
    private let networkWaits: NetworkWaitsDriver
    /// Where the transfers' jobs wait for the disk and the queue, and where windows run.
    private let blocking: BlockingPool
    /// The running apps' delegates: completions and challenges go to them first.
    private let delegates: AppDelegateRouter?
    /// A managed app's packs, installed by the host when their downloads end.
    private let packs: ManagedPacks
    /// Makes each transfer's job.
    private let jobs: TransferJobs
    /// The credentials given for a challenge.
    private let credentials: Credentials
    private struct Held {
        var state = EngineState()
        /// Each running transfer's task, to cancel it; and each challenge's.
        var tasks: [String: Task<Void, Never>] = [:]
        var asking: [String: Task<Void, Never>] = [:]
        /// Each app's running delivery.
        var delivering: [String: Task<Void, Never>] = [:]
    }
    private let held = Mutex(Held())

    init(
        store: QueueStore, dataRoot: DataRoot, settings: HostEngine.Settings, observe: @escaping LifecycleObserver,
        events: EngineEvents, launchGate: LaunchGate, networkWaits: NetworkWaitsDriver, blocking: BlockingPool,
        delegates: AppDelegateRouter?, packs: ManagedPacks, jobs: TransferJobs, credentials: Credentials
    ) {
        self.store = store
        self.dataRoot = dataRoot
        self.settings = settings
        self.observe = observe
        self.events = events
        self.launchGate = launchGate
        self.networkWaits = networkWaits
        self.blocking = blocking
        self.delegates = delegates
        self.packs = packs
        self.jobs = jobs
        self.credentials = credentials
    }

    /// The extension windows the engine opens (content requests, packs' questions, challenges, completions), whose
    /// apps' download managers report to this driver. [any thread]
    var windows: WindowLauncher {
        WindowLauncher(limits: settings.limits, dataRoot: dataRoot, blocking: blocking, observe: observe, driver: self)
    }

    /// What an app's `BADownloadManager` reaches, reporting to this driver: from its extension's windows, or from
    /// the app through the service. [any thread]
    func downloads(for appIdentifier: String) -> AppDownloads {
        AppDownloads(appIdentifier: appIdentifier, store: store, dataRoot: dataRoot, observe: observe, driver: self)
    }

    /// How many times the limit the reserve holds. Small files free slots faster than turns come (paced, and each
    /// waiting for a core): a reserve of the limit often ran dry, and the slots that freed then waited for a turn;
    /// a deeper one lasts until the queue runs out (docs/performance/DECISIONS.md #14).
    static let reserveDepth = 4

    // MARK: Events [any thread]

    /// Hands `event` to the state and performs what it says. [any thread]
    func send(_ event: EngineState.Event) {
        perform(held.withLock { held in
            if case .transferEnded(let uniqueIdentifier, _) = event { held.tasks[uniqueIdentifier] = nil }
            return held.state.handle(event)
        })
    }

    /// Does what the state decided. [the sender's thread, outside the lock]
    private func perform(_ actions: [EngineState.Action]) {
        for action in actions {
            switch action {
            case .start(let chosen):
                start(chosen)
            case .cancelTask(let uniqueIdentifier):
                held.withLock { $0.tasks[uniqueIdentifier] }?.cancel()
            case .wake(let kinds):
                events.post(kinds)
            case .writeTurn:
                // Only `turnBegins` asks for it, and only `turn` sends that.
                preconditionFailure("a turn is written by the engine's loop")
            case .ask(let challenge, let row, let otherwise):
                ask(challenge, row: row, otherwise: otherwise)
            case .save(let row):
                try? store.save(row)
            case .charge(let appIdentifier, let bytes, let essential):
                charge(appIdentifier, bytes, essential: essential)
            case .discardFiles(let partialPath, let finishedPath):
                TransferOutcome.discardFiles(partialPath: partialPath, finishedPath: finishedPath)
            case .tell(let event):
                observe(event)
            case .recorded(let appIdentifier):
                completionRecorded(appIdentifier)
            case .startDelivery(let appIdentifier, let batchSize):
                startDelivery(appIdentifier, batchSize: batchSize)
            case .announceLaunchIfReady(let apps):
                for app in apps.sorted() {
                    do {
                        try launchGate.announceIfReady(app)
                    } catch {
                        observe(.queueFailed("\(app): \(error)"))
                    }
                }
            }
        }
    }

    /// Starts the task of a download the state recorded running (a turn's choice, or the reserve at a freed slot).
    /// The task is made outside the lock, since making it may wake the transfer thread, and attached after: a
    /// cancel that came between reaches it then. [the sender's thread: the engine loop, or the transfer thread for a
    /// freed slot, so that its request is made without a thread hop]
    private func start(_ chosen: EngineState.Chosen) {
        let uniqueIdentifier = chosen.download.uniqueIdentifier
        let limits = settings.slotLimits
        attach(uniqueIdentifier, Task(executorPreference: jobs.client.transferExecutor) { [jobs, blocking] in
            let job = jobs.job(
                chosen.download, app: chosen.app, policy: chosen.policy, blocking: blocking,
                bodyEnded: { [weak self] in self?.send(.bodyEnded(uniqueIdentifier, limits: limits)) },
                progressed: { [weak self] row in self?.send(.progressed(row)) })
            await job.run { ending in self.send(.transferEnded(uniqueIdentifier, ending)) }
        })
    }

    /// Gives a transfer the state started its task: cancelled at once when a cancel came first; nothing when the
    /// task has ended already.
    private func attach(_ uniqueIdentifier: String, _ task: Task<Void, Never>) {
        let cancelled = held.withLock { held -> Bool in
            guard let entry = held.state.slots.entries[uniqueIdentifier] else { return false }
            held.tasks[uniqueIdentifier] = task
            return entry.cancelled
        }
        if cancelled { task.cancel() }
    }

    /// Asks the app's delegate, else its extension in a window, about a challenge; then queues the row again with
    /// the credentials given, or records the 401 as final. One task per challenged download, which `shutdown` waits
    /// for. [the sender's thread; the asking on a task of its own]
    private func ask(_ challenge: ServerChallenge, row: QueuedDownload, otherwise: TransferOutcome) {
        let uniqueIdentifier = row.uniqueIdentifier
        held.withLock { held in
            held.asking[uniqueIdentifier] = Task { [credentials, delegates, windows, store] in
                let outcome: TransferOutcome
                if await credentials.ask(challenge, for: row, delegates: delegates, windows: windows, store: store) {
                    outcome = otherwise.queuedAgain(row)
                } else {
                    credentials.forget(uniqueIdentifier)
                    outcome = otherwise
                }
                self.held.withLock { _ = $0.asking.removeValue(forKey: uniqueIdentifier) }
                self.send(.challengeAnswered(uniqueIdentifier, outcome))
            }
        }
    }

    /// Charges an app's allowance what a download received beyond its declared size. [the sender's thread: the
    /// blocking pool]
    private func charge(_ appIdentifier: String, _ bytes: Int64, essential: Bool) {
        do {
            try store.charge(appIdentifier, bytes: bytes, essential: essential)
        } catch {
            observe(.queueFailed("\(appIdentifier): charging \(bytes) bytes to the allowance: \(error)"))
        }
    }

    // MARK: Deliveries

    /// A completion of the app's was recorded: a running app's delegate (or the host's pack installer) gets it now,
    /// without waiting for the loop's next look; for the extension it waits to be batched. [the sender's thread: the
    /// engine loop, whose turn recorded it]
    func completionRecorded(_ appIdentifier: String) {
        let atOnce = CompletionDelivery.receivesAtOnce(appIdentifier, delegates: delegates, store: store)
        send(.completionRecorded(appIdentifier, atOnce: atOnce, at: .now))
    }

    /// Starts the deliveries that are due, given the queue as the loop read it (at `readSince` or later).
    /// [engine loop]
    func deliverDue(_ apps: Set<String>, _ snapshot: QueueStore.Snapshot, readSince: ContinuousClock.Instant) {
        var read: [String: (queue: AppDelivery.Queue, claimsHeld: Bool)] = [:]
        for app in apps {
            let pending = snapshot.pendingCompletions[app, default: 0]
            // Asked only when something is pending: it reads the app's row.
            let queue = AppDelivery.Queue(
                pendingCompletions: pending, hasActiveDownloads: snapshot.appsWithActiveDownloads.contains(app),
                receivesAtOnce: pending > 0
                    && CompletionDelivery.receivesAtOnce(app, delegates: delegates, store: store))
            read[app] = (queue, snapshot.appsWithClaimedCompletions.contains(app))
        }
        send(.queueRead(read, readSince: readSince, delay: settings.deliveryDelay, at: .now))
    }

    /// Runs one delivery of the app's on a task of its own, which says how it ended. [the sender's thread]
    private func startDelivery(_ appIdentifier: String, batchSize: Int) {
        let delivery = CompletionDelivery(
            store: store, dataRoot: dataRoot, delegates: delegates, packs: packs, windows: windows, blocking: blocking,
            launchGate: launchGate, events: events, observe: observe
        ) { [weak self] in self?.send($0) }
        held.withLock { held in
            held.delivering[appIdentifier] = Task {
                var failed: String?
                do {
                    try await delivery.deliver(appIdentifier, batchSize: batchSize)
                } catch {
                    failed = "\(error)".printable()
                }
                self.held.withLock { _ = $0.delivering.removeValue(forKey: appIdentifier) }
                self.send(.deliveryEnded(appIdentifier, error: failed, at: .now))
            }
        }
    }

    /// How long until the oldest waiting batch is due, claims are to be settled again, or a failed delivery may be
    /// tried again, at most `limit`. [engine loop]
    func nextDeliveryDeadline(within limit: Duration) -> Duration {
        let now = ContinuousClock.now
        let next = held.withLock { $0.state.nextDeliveryDeadline(delay: settings.deliveryDelay, at: now) }
        return max(.zero, min(limit, next.map { $0 - now } ?? limit))
    }

    /// The app's completions are no longer waited for by a drain: its last deliveries failed in a row. Returns the
    /// last error, or nil. [any thread]
    func leftPending(_ appIdentifier: String) -> String? { held.withLock { $0.state.leftPending(appIdentifier) } }

    // MARK: What the apps' calls send [any thread]

    /// Wakes the engine for a newly queued download, unless it could not start now anyway (every transfer slot, or
    /// every slot for its host, is taken): it is looked at when one frees. An app scheduling thousands one call at a
    /// time then costs the engine nothing per call. A foreground download wakes it at once (`wakeNow`).
    func queued(_ download: QueuedDownload) {
        if download.foreground {
            events.wakeNow()
        } else if couldStart(download) {
            events.post(.queueChanged)
        }
    }

    /// Wakes the engine for what must not wait for the pace of its turns: a promotion, a delegate.
    func wakeNow() { events.wakeNow() }

    /// Stops a running transfer whose row is gone (cancelled, uninstalled) and deletes its partial file: the state
    /// cancels its task, or drops it from the reserve (`cancelled`).
    func stopTransfer(_ uniqueIdentifier: String) {
        send(.cancelled(uniqueIdentifier))
        credentials.forget(uniqueIdentifier)
        unlink(dataRoot.partialPath(for: uniqueIdentifier))
        events.post(.transferEnded)
    }

    /// The reserve was chosen under conditions that no longer hold: the next turn chooses again.
    func dropReserve() { send(.reserveDropped) }

    // MARK: What the state says now [any thread]

    /// Whether nothing runs: no transfer, no challenge being asked about, no delivery.
    var isIdle: Bool { held.withLock { $0.state.isIdle } }

    /// The slots as they are now.
    var slots: TransferSlots { held.withLock { $0.state.slots } }

    /// The running downloads' unique identifiers (with those started from the reserve that a turn has yet to mark
    /// moving), and how many of those holding a slot run per host and per app.
    func current() -> (Set<String>, perHost: [String: Int], perApp: [String: Int]) {
        let slots = slots
        return (Set(slots.entries.keys).union(slots.startedEarly.keys), slots.perHost, slots.perApp)
    }

    /// Whether a download could start now: a free slot, and a free slot for its host (foreground ones always can).
    func couldStart(_ download: QueuedDownload) -> Bool {
        held.withLock { $0.state.slots.couldStart(download, settings.slotLimits) }
    }

    // MARK: The turn [engine loop]

    /// Records the outcomes that came since the last turn and starts what may start for `apps`; returns the queue as
    /// it was read (after what this recorded, before what it started). What it chooses beyond the free slots, up to
    /// `reserveDepth` times the limit, is reserved: started the moment a transfer's body ends, which the next turn
    /// then records. The last turn's reserve serves until this one's replaces it, so a reserved download waits for
    /// at most one turn's choice; one that both start (the reserve and the turn) runs once (`TransferSlots`).
    ///
    /// Why a reserve: while many small files run, the engine is busy with turns almost all the time (each with its
    /// transaction), and a freed slot waited for the next one: time lost on every file, which shows as soon as the
    /// server is not on the same machine (docs/performance/DECISIONS.md #12). [engine loop]
    func turn(_ apps: Set<String>) throws -> QueueStore.Snapshot {
        let limits = settings.slotLimits
        var records: [String: (AppRecord, AppPolicy)] = [:]
        var unreadable = Set<String>()
        func chosen(_ download: QueuedDownload) -> EngineState.Chosen? {
            // Each app read once a turn: its policy (its allow list canonicalized) serves every transfer it starts.
            // One that cannot be read starts nothing: its rows, marked moving, are queued again once nothing runs.
            let id = download.appIdentifier
            if records[id] == nil && !unreadable.contains(id) {
                do {
                    if let app = try store.app(id) { records[id] = (app, app.policy) }
                } catch {
                    unreadable.insert(id)
                    observe(.queueFailed("\(id): \(error)"))
                }
            }
            return records[id].map { EngineState.Chosen(download, app: $0.0, policy: $0.1) }
        }
        var reserve: [QueuedDownload] = []
        let reserveLimit = limits.total * Self.reserveDepth
        try wakeWaitingForNetwork()
        // Hosts the machine has no path to wait for their probe: their downloads would only fail again. And what the
        // machine says of its network (metered, no connectivity, asleep) holds back the downloads it rules out.
        let offline = networkWaits.held()
        let conditions = networkWaits.conditions
        while true {
            let slots = slots
            var choice = TurnChoice(slots: slots, limits: limits, reserve: reserve, reserveLimit: reserveLimit)
            let excluding = Set(slots.entries.keys).union(slots.startedEarly.keys)
                .union(reserve.map(\.uniqueIdentifier))
            // Candidates turned away because their host filled up during this pass, with the reserve full: another
            // pass, with that host left out, may find others for the slots still free.
            let saturated = offline.union(choice.reserveFull ? slots.saturatedHosts(limits) : [])
            let actions = held.withLock { $0.state.handle(.turnBegins) }
            guard case .writeTurn(let outcomes, let startedEarly)? = actions.first else { preconditionFailure() }
            let written: (snapshot: QueueStore.Snapshot, started: [QueuedDownload], gone: Set<String>)
            do {
                written = try store.turn(
                    recording: outcomes.map(\.row), startedEarly: startedEarly, now: Date(), apps: apps,
                    excluding: excluding, saturatedHosts: saturated, running: slots.perApp, conditions: conditions,
                    choice: &choice)
            } catch {
                send(.turnFailed(recorded: outcomes, error: "\(error)"))
                throw error
            }
            reserve = choice.reserve
            // The state records the chosen running and puts the reserve in place in one event, before any of their
            // tasks exists: a transfer that ends at once then finds its successor in this turn's reserve.
            send(.turnWritten(
                recorded: outcomes, gone: written.gone, started: written.started.compactMap(chosen),
                reserve: reserve.compactMap(chosen)))
            if !choice.turnedAway || choice.slotsFull || written.started.isEmpty { return written.snapshot }
        }
    }

    /// Makes due at once the downloads waiting for the network that `NetworkWaits` says may go: after a change to
    /// the network, every one; after a transfer reached its host, that host's. [engine loop]
    private func wakeWaitingForNetwork() throws {
        switch networkWaits.takeToWake() {
        case nil: break
        case .all: try store.wakeWaitingForNetwork()
        case .hosts(let hosts): try store.wakeWaitingForNetwork(hosts: hosts)
        }
    }

    /// Returns when the engine's next turn is due, once something woke it (`EngineEvents`): at once, unless the
    /// reserve lasts. While it does, the reserve starts the next transfers as slots free, and a turn is needed only to
    /// record what ended and deliver it; letting what ends gather until `turnPace` after `start` (the last turn's)
    /// makes one transaction and one delivery of several, where many small files had a turn for every one or two
    /// (docs/performance/DECISIONS.md #13). The reserve running low (`reserveLow`), or a wake that must not wait
    /// (`turnNow`: `EngineEvents.wakeNow`), ends the wait. [engine loop]
    func paceNextTurn(since start: ContinuousClock.Instant) async {
        let limits = settings.slotLimits
        while held.withLock({ $0.state.slots.reserveLasts(limits) }) && !Task.isCancelled {
            let elapsed = ContinuousClock.now - start
            guard elapsed < settings.turnPace else { return }
            let left = settings.turnPace - elapsed
            if await events.next(of: [.turnNow, .reserveLow], timeout: left).contains(.turnNow) { return }
        }
    }

    /// When the loop should look again at the latest: a waiting download's retry time, or a second from now.
    /// [engine loop]
    func nextWake(_ snapshot: QueueStore.Snapshot) -> Duration {
        guard let retry = snapshot.nextRetry else { return .seconds(1) }
        return min(.seconds(1), .milliseconds(max(0, Int64(retry.timeIntervalSinceNow * 1000))))
    }

    /// Stops every running transfer and waits for each to end, then for the challenges being asked about (a window
    /// runs to its end: its budget bounds it), then records where each stopped (its partial file stays), then waits
    /// for the deliveries.
    /// [engine loop's caller, once the loop ended]
    func shutdown() async {
        // No transfer may start from the reserve while the running ones are stopped.
        send(.reserveDropped)
        let tasks = held.withLock { Array($0.tasks.values) }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        for task in held.withLock({ Array($0.asking.values) }) { await task.value }
        let actions = held.withLock { $0.state.handle(.turnBegins) }
        if case .writeTurn(let outcomes, let startedEarly)? = actions.first {
            do {
                let gone = try store.record(outcomes.map(\.row), startedEarly: startedEarly, start: []).gone
                send(.turnWritten(recorded: outcomes, gone: gone, started: [], reserve: []))
            } catch {
                send(.turnFailed(recorded: outcomes, error: "\(error)"))
            }
        }
        // The deliveries in progress, and any that record started: a window runs to its end (its budget bounds it),
        // so that what it delivered is recorded.
        while let task = held.withLock({ $0.delivering.values.first }) { await task.value }
    }
}

extension HostEngine.Settings {
    var slotLimits: TransferSlots.Limits {
        TransferSlots.Limits(total: maximumConcurrentTransfers, perHost: maximumTransfersPerHost)
    }
}
