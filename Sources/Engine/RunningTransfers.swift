import Policy
import Queue
import Synchronization

/// The transfers running now, and the reserve: the `TransferSlots` state machine under a lock, with each running
/// transfer's task (to stop one) and what each download the slots may start needs (its app and its policy). It hands
/// each event to the slots and turns their actions into work for the scheduler, which does it outside the lock.
/// [any thread]
///
/// Every transfer's end and every turn take the lock; each call holds it for a few steps of the value's.
final class RunningTransfers: Sendable {
    /// A download the slots start, with what its transfer needs.
    struct Chosen: Sendable {
        var download: QueuedDownload
        var app: AppRecord
        var policy: AppPolicy

        init(_ download: QueuedDownload, app: AppRecord, policy: AppPolicy) {
            self.download = download
            self.app = app
            self.policy = policy
        }
    }

    /// The slots' actions, made concrete: what the scheduler does once the lock is released.
    enum Work: Sendable {
        /// Make the transfer's task (`attach` it).
        case start(Chosen)
        case cancel(Task<Void, Never>)
        /// Post to the engine's events: a slot changed hands (`TransferSlots.Action.wake`).
        case wake(reserveLow: Bool)
    }

    private struct State {
        var slots = TransferSlots()
        var tasks: [String: Task<Void, Never>] = [:]
        /// The app and policy of each download the last turn chose, by unique identifier: its reserve's, until they
        /// start or the next turn replaces them.
        var records: [String: (AppRecord, AppPolicy)] = [:]
    }

    private let state = Mutex(State())

    var isEmpty: Bool { state.withLock { $0.slots.entries.isEmpty } }
    var tasks: [Task<Void, Never>] { state.withLock { Array($0.tasks.values) } }
    /// The slots as they are now.
    var slots: TransferSlots { state.withLock { $0.slots } }

    /// Their unique identifiers (with those started from the reserve that a turn has yet to mark moving), and how
    /// many of those holding a slot run per host and per app.
    func current() -> (Set<String>, perHost: [String: Int], perApp: [String: Int]) {
        let slots = slots
        return (Set(slots.entries.keys).union(slots.startedEarly.keys), slots.perHost, slots.perApp)
    }

    /// Hands `event` to the slots and returns their actions as work. A turn's choice (`turnChose`) comes with the
    /// app and policy of every download it names, and only with downloads that have them.
    func handle(_ event: TransferSlots.Event, records: [String: (AppRecord, AppPolicy)] = [:]) -> [Work] {
        state.withLock { state in
            if case .turnChose = event { state.records = records }
            if case .taskEnded(let uniqueIdentifier) = event { state.tasks[uniqueIdentifier] = nil }
            return state.slots.handle(event).compactMap { action -> Work? in
                switch action {
                case .start(let download):
                    // Every download a turn chose comes with its record (`Scheduler.turn` leaves out those without).
                    guard let (app, policy) = state.records.removeValue(forKey: download.uniqueIdentifier) else {
                        return nil
                    }
                    return .start(Chosen(download, app: app, policy: policy))
                case .cancelTask(let uniqueIdentifier):
                    return state.tasks[uniqueIdentifier].map { .cancel($0) }
                case .wake(let reserveLow):
                    return .wake(reserveLow: reserveLow)
                }
            }
        }
    }

    /// Records a transfer as running before its task exists (the task removes it when it ends); false, changing
    /// nothing, when it runs already. For tests, which start transfers without a turn.
    @discardableResult
    func add(_ uniqueIdentifier: String, host: String, app: String) -> Bool {
        state.withLock { $0.slots.add(uniqueIdentifier, host: host, app: app) }
    }

    /// A transfer's task ended (`TransferSlots.Event.taskEnded`).
    func remove(_ uniqueIdentifier: String) {
        _ = handle(.taskEnded(uniqueIdentifier))
    }

    /// Stops a download (`TransferSlots.Event.cancelled`): a reserved one is dropped, a running one's task cancelled
    /// (at once, or when it is attached).
    func cancel(_ uniqueIdentifier: String) {
        for case .cancel(let task) in handle(.cancelled(uniqueIdentifier)) {
            task.cancel()
        }
    }

    var reservedCount: Int { state.withLock { $0.slots.reserved.count } }

    /// Replaces the reserve, leaving out what runs already: a turn's choice that starts nothing (`turnChose`).
    func reserve(_ downloads: [Chosen]) {
        let records = Dictionary(
            downloads.map { ($0.download.uniqueIdentifier, ($0.app, $0.policy)) }, uniquingKeysWith: { $1 })
        _ = handle(.turnChose(started: [], reserve: downloads.map(\.download)), records: records)
    }

    /// Takes the first reserved download that fits the free slots and records it as running, as a body's end does
    /// after freeing its slot (`TransferSlots.takeReserved`); for tests of the reserve's rules through the lock.
    func takeReserved(_ settings: HostEngine.Settings) -> Chosen? {
        state.withLock { state in
            guard let next = state.slots.takeReserved(settings.slotLimits),
                let (app, policy) = state.records.removeValue(forKey: next.uniqueIdentifier)
            else { return nil }
            return Chosen(next, app: app, policy: policy)
        }
    }

    func dropReserve() {
        state.withLock { $0.slots.dropReserve() }
    }

    /// The transfers started from the reserve since the last call, for the caller's transaction to mark moving.
    func takeStartedEarly() -> [QueuedDownload] {
        state.withLock { $0.slots.takeStartedEarly() }
    }

    /// Gives a transfer the slots started its task: cancelled at once when a cancel came first; nothing when the task
    /// has ended already.
    func attach(_ uniqueIdentifier: String, _ task: Task<Void, Never>) {
        let cancelled = state.withLock { state -> Bool in
            guard let entry = state.slots.entries[uniqueIdentifier] else { return false }
            state.tasks[uniqueIdentifier] = task
            return entry.cancelled
        }
        if cancelled { task.cancel() }
    }

    /// Whether the reserve lasts until the next turn (`TransferSlots.reserveLasts`).
    func reserveLasts(_ limits: TransferSlots.Limits) -> Bool {
        state.withLock { $0.slots.reserveLasts(limits) }
    }

    /// Whether a download could start now: a free slot, and a free slot for its host (foreground ones always can).
    func couldStart(_ download: QueuedDownload, _ settings: HostEngine.Settings) -> Bool {
        state.withLock { $0.slots.couldStart(download, settings.slotLimits) }
    }
}

extension HostEngine.Settings {
    var slotLimits: TransferSlots.Limits {
        TransferSlots.Limits(total: maximumConcurrentTransfers, perHost: maximumTransfersPerHost)
    }
}
