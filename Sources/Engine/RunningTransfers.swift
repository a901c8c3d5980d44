import Policy
import Queue
import Synchronization

/// The transfers running now, and the reserve: a `TransferSlots` value under a lock, with each running transfer's
/// task (to stop one) and what the reserve's transfers need (their app and its policy). [any thread]
///
/// Every transfer's end and every turn take the lock; each call holds it for a few steps of the value's.
final class RunningTransfers: Sendable {
    /// A download the last turn chose beyond the free slots, with what its transfer needs.
    struct Reserved: Sendable {
        var download: QueuedDownload
        var app: AppRecord
        var policy: AppPolicy

        init(_ download: QueuedDownload, app: AppRecord, policy: AppPolicy) {
            self.download = download
            self.app = app
            self.policy = policy
        }
    }

    private struct State {
        var slots = TransferSlots()
        var tasks: [String: Task<Void, Never>] = [:]
        /// The reserve's apps and policies, by the download's unique identifier.
        var reservedApps: [String: (AppRecord, AppPolicy)] = [:]
    }

    private let state = Mutex(State())

    var isEmpty: Bool { state.withLock { $0.slots.entries.isEmpty } }
    var reservedCount: Int { state.withLock { $0.slots.reserved.count } }
    var tasks: [Task<Void, Never>] { state.withLock { Array($0.tasks.values) } }
    /// The slots as they are now.
    var slots: TransferSlots { state.withLock { $0.slots } }

    /// Their unique identifiers (with those started from the reserve that a turn has yet to mark moving), and how
    /// many of those holding a slot run per host and per app.
    func current() -> (Set<String>, perHost: [String: Int], perApp: [String: Int]) {
        let slots = slots
        return (Set(slots.entries.keys).union(slots.startedEarly.keys), slots.perHost, slots.perApp)
    }

    /// Records a transfer as running before its task exists (the task removes it when it ends); false, changing
    /// nothing, when the reserve started it already (while a turn chose it from the queue as it was).
    @discardableResult
    func add(_ uniqueIdentifier: String, host: String, app: String) -> Bool {
        state.withLock { $0.slots.add(uniqueIdentifier, host: host, app: app) }
    }

    /// Replaces the reserve, leaving out what runs already.
    func reserve(_ downloads: [Reserved]) {
        state.withLock { state in
            state.slots.reserve(downloads.map(\.download))
            state.reservedApps = Dictionary(
                downloads.map { ($0.download.uniqueIdentifier, ($0.app, $0.policy)) }, uniquingKeysWith: { $1 })
        }
    }

    func dropReserve() {
        state.withLock { $0.slots.dropReserve() }
    }

    /// Takes the first reserved download that fits the free slots and records it as running
    /// (`TransferSlots.takeReserved`), to be marked moving by the next turn.
    func takeReserved(_ settings: HostEngine.Settings) -> Reserved? {
        state.withLock { state in
            guard let next = state.slots.takeReserved(settings.slotLimits),
                let (app, policy) = state.reservedApps.removeValue(forKey: next.uniqueIdentifier)
            else { return nil }
            return Reserved(next, app: app, policy: policy)
        }
    }

    /// The transfers started from the reserve since the last call, for the caller's transaction to mark moving.
    func takeStartedEarly() -> [QueuedDownload] {
        state.withLock { $0.slots.takeStartedEarly() }
    }

    /// Gives a transfer added by `add` its task: cancelled at once when a cancel came first; nothing when the task
    /// has ended already.
    func attach(_ uniqueIdentifier: String, _ task: Task<Void, Never>) {
        let cancelled = state.withLock { state -> Bool in
            guard let entry = state.slots.entries[uniqueIdentifier] else { return false }
            state.tasks[uniqueIdentifier] = task
            return entry.cancelled
        }
        if cancelled { task.cancel() }
    }

    func remove(_ uniqueIdentifier: String) {
        state.withLock { state in
            state.slots.remove(uniqueIdentifier)
            state.tasks[uniqueIdentifier] = nil
        }
    }

    func cancel(_ uniqueIdentifier: String) {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.slots.cancel(uniqueIdentifier) ? state.tasks[uniqueIdentifier] : nil
        }
        task?.cancel()
    }

    /// Frees a transfer's slot once its body ended, unless as many as the limit are finishing already; true when it
    /// did.
    func releaseSlot(_ uniqueIdentifier: String, limit: Int) -> Bool {
        state.withLock { $0.slots.bodyEnded(uniqueIdentifier, limit: limit) }
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
