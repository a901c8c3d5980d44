import Foundation
import Policy
import Queue
import Synchronization
import Transfer

/// Decides what runs next and starts it: foreground first, then the background slots shared between apps (the
/// next to the app with the fewest running; within an app, essential, priority, age), within the global and
/// per-host limits (foreground downloads, which the app waits for, are not held back by them), each transfer a
/// `TransferJob` on the transfer thread, then on the blocking pool from its body's end. It asks the
/// queue only for as many downloads as it can start and reserve (`turn`), so a turn costs the same whatever the
/// queue's length. A turn (`QueueStore.turn`) records the outcomes of the transfers that ended since the last one
/// (`TransferOutcomes`), reads the queue and marks the chosen moving, in one transaction when there are outcomes.
final class Scheduler: Sendable {
    private let context: EngineContext
    /// What happens to a completion the moment a transfer records one.
    private let completed: @Sendable (String) -> Void
    private var running: RunningTransfers { context.running }

    /// - Parameter completed: called with the app's identifier when a transfer ends with a completion to deliver.
    init(context: EngineContext, completed: @escaping @Sendable (String) -> Void) {
        self.context = context
        self.completed = completed
    }

    var isIdle: Bool { running.isEmpty }

    /// How many times the limit the reserve holds. Small files free slots faster than turns come (paced, and each
    /// waiting for a core): a reserve of the limit often ran dry, and the slots that freed then waited for a turn;
    /// a deeper one lasts until the queue runs out (docs/PERFORMANCE.md, "One event loop, a deeper reserve").
    static let reserveDepth = 4

    /// Whether the reserve holds enough to fill the slots that free while the next turn waits (`paceNextTurn`): a
    /// quarter of the limit at least.
    private var reserveLasts: Bool {
        running.reservedCount >= max(1, context.settings.maximumConcurrentTransfers / 4)
    }

    /// Records the outcomes that came since the last turn and starts what may start for `apps`; returns the queue as
    /// it was read (after what this recorded, before what it started). What it chooses beyond the free slots, up to
    /// `reserveDepth` times the limit, is reserved: started the moment a transfer's body ends (`slotFreed`), which
    /// the next turn then records. The last turn's reserve serves until this one's replaces it, so a reserved
    /// download waits for at most one turn's choice; one that both start (the reserve and the turn) runs once
    /// (`RunningTransfers.add`).
    ///
    /// Why a reserve: while many small files run, the engine is busy with turns almost all the time (each with its
    /// transaction), and a freed slot waited for the next one: time lost on every file, which shows as soon as the
    /// server is not on the same machine (docs/PERFORMANCE.md, "A freed slot filled without waiting for a turn").
    func turn(_ apps: Set<String>) throws -> QueueStore.Snapshot {
        let settings = context.settings
        context.turnWanted.store(false, ordering: .relaxed)
        var reserve: [QueuedDownload] = []
        let reserveLimit = settings.maximumConcurrentTransfers * Self.reserveDepth
        var records: [String: (AppRecord, AppPolicy)] = [:]
        func record(_ id: String) throws -> (AppRecord, AppPolicy)? {
            // Each app read once a turn: its policy (its allow list canonicalized) serves every transfer it starts.
            if records[id] == nil, let app = try context.store.app(id) { records[id] = (app, app.policy) }
            return records[id]
        }
        while true {
            let (runningNow, perHost, perApp) = running.current()
            var count = running.slotsTaken
            var hosts = perHost
            // Candidates turned away because their host filled up during this pass, with the reserve full: another
            // pass, with that host left out, may find others for the slots still free.
            var turnedAway = false
            let reserveFull = reserve.count >= reserveLimit
            let (snapshot, started) = try writeTurn(
                apps: apps, excluding: runningNow.union(reserve.map(\.uniqueIdentifier)),
                saturatedHosts: reserveFull
                    ? Set(hosts.filter { $0.value >= settings.maximumTransfersPerHost }.keys) : [],
                backgroundLimit: settings.maximumConcurrentTransfers - count + (reserveLimit - reserve.count),
                running: perApp
            ) { runnable in
                var chosen: [QueuedDownload] = []
                for download in runnable {
                    if download.foreground
                        || (count < settings.maximumConcurrentTransfers
                            && hosts[download.host, default: 0] < settings.maximumTransfersPerHost)
                    {
                        count += 1
                        hosts[download.host, default: 0] += 1
                        chosen.append(download)
                    } else if reserve.count < reserveLimit {
                        reserve.append(download)
                    } else {
                        turnedAway = true
                    }
                }
                return chosen
            }
            for download in started {
                guard let (app, policy) = try record(download.appIdentifier) else { continue }
                start(download, app: app, policy: policy)
            }
            if !turnedAway || count >= settings.maximumConcurrentTransfers || started.isEmpty {
                running.reserve(try reserve.compactMap { download in
                    try record(download.appIdentifier).map { app, policy in
                        RunningTransfers.Reserved(download, app: app, policy: policy)
                    }
                })
                return snapshot
            }
        }
    }

    /// Returns when the engine's next turn is due, once something woke it (`Signal`): at once, unless the reserve
    /// lasts. While it does, the reserve starts the next transfers as slots free, and a turn is needed only to record
    /// what ended and deliver it; letting what ends gather until `turnPace` after `start` (the last turn's) makes one
    /// transaction and one delivery of several, where many small files had a turn for every one or two
    /// (docs/PERFORMANCE.md, "Turns paced while the reserve lasts"). A reserve running low, or a wake that must not
    /// wait (`EngineContext.wakeNow`), ends the wait.
    func paceNextTurn(since start: ContinuousClock.Instant) async {
        // A fire kept from before the last turn refilled the reserve ends a wait early: the reserve is looked at again.
        while reserveLasts && !context.turnWanted.load(ordering: .relaxed) && !Task.isCancelled {
            let elapsed = ContinuousClock.now - start
            guard elapsed < context.settings.turnPace else { return }
            await context.turnDue.wait(for: context.settings.turnPace - elapsed)
        }
    }

    /// A transfer's body ended: its slot goes to the next reserved download, if one fits, and the engine looks
    /// again. [transfer thread] It only starts a task.
    func slotFreed(_ uniqueIdentifier: String) {
        guard running.releaseSlot(uniqueIdentifier, limit: context.settings.maximumConcurrentTransfers) else { return }
        if let next = running.takeReserved(context.settings) {
            start(next.download, app: next.app, policy: next.policy, added: true)
        }
        context.signal.fire()
        if !reserveLasts { context.turnDue.fire() }
    }

    /// - Parameter added: whether `running` holds it already (`takeReserved` added it).
    private func start(_ download: QueuedDownload, app: AppRecord, policy: AppPolicy, added: Bool = false) {
        let uniqueIdentifier = download.uniqueIdentifier
        // Recorded before its task exists, so that the task's end always finds it; the task is made outside the
        // lock, since making it may wake the transfer thread.
        if !added && !running.add(uniqueIdentifier, host: download.host, app: download.appIdentifier) { return }
        // A transfer runs on a transfer thread until its body ends: the one this runs on, when a freed slot starts
        // it (`slotFreed`), so that its request is made without a thread hop.
        running.attach(uniqueIdentifier, Task(executorPreference: context.client.transferExecutor) { [context] in
            let job = TransferJob(
                context: context, queued: download, app: app, policy: policy, blocking: context.blocking
            ) { [weak self] in
                self?.slotFreed(uniqueIdentifier)
            }
            // An outcome is told once the next turn recorded it; none to record (requeued after a challenge) has
            // changed its row already.
            await job.run { outcome in
                if let outcome { context.outcomes.add(outcome) }
                self.running.remove(uniqueIdentifier)
                context.signal.fire()
                if outcome == nil { context.transferEnded.fire() }
            }
        })
    }

    /// Takes the outcomes waiting, writes them, reads the queue and marks what `choose` picks moving
    /// (`QueueStore.turn`); then tells the outcomes. Returns the snapshot and the downloads marked moving. A failure
    /// is the queue's: the outcomes' rows stay marked moving, and are queued again once nothing runs (`HostEngine`'s
    /// loop).
    private func writeTurn(
        apps: Set<String>, excluding: Set<String>, saturatedHosts: Set<String>, backgroundLimit: Int,
        running: [String: Int], choose: ([QueuedDownload]) -> [QueuedDownload]
    ) throws -> (QueueStore.Snapshot, [QueuedDownload]) {
        try recordingOutcomes { rows, startedEarly in
            let (snapshot, started, gone) = try context.store.turn(
                recording: rows, startedEarly: startedEarly, now: Date(), apps: apps, excluding: excluding,
                saturatedHosts: saturatedHosts, backgroundLimit: backgroundLimit, running: running, choose: choose)
            return ((snapshot, started), gone)
        }
    }

    /// Takes the outcomes waiting, and the transfers started from the reserve since the last turn, and has `write`
    /// record them (it returns what else it did, and which rows were gone); tells the outcomes once committed, or says
    /// they were not recorded.
    private func recordingOutcomes<Written>(
        _ write: ([QueuedDownload], _ startedEarly: [QueuedDownload]) throws -> (Written, gone: Set<String>)
    ) throws -> Written {
        // Those started early first: an outcome taken here implies its start was taken here or before.
        let startedEarly = running.takeStartedEarly()
        let outcomes = context.outcomes.take()
        do {
            let (written, gone) = try write(outcomes.map(\.row), startedEarly)
            TransferOutcomes.recorded(outcomes, gone: gone, context: context, completed: completed)
            return written
        } catch {
            if !outcomes.isEmpty {
                context.observe(.queueFailed("recording \(outcomes.count) transfers' outcomes: \(error)"))
                context.transferEnded.fire()
            }
            throw error
        }
    }

    /// When the loop should look again at the latest: a waiting download's retry time, or a second from now.
    func nextWake(_ snapshot: QueueStore.Snapshot) -> Duration {
        guard let retry = snapshot.nextRetry else { return .seconds(1) }
        return min(.seconds(1), .milliseconds(max(0, Int64(retry.timeIntervalSinceNow * 1000))))
    }

    /// Stops every running transfer and waits for each to end, then records where each stopped (its partial file
    /// stays).
    func shutdown() async {
        // No transfer may start from the reserve while the running ones are stopped.
        running.dropReserve()
        let tasks = running.tasks
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        try? recordingOutcomes { rows, startedEarly in
            ((), try context.store.record(rows, startedEarly: startedEarly, start: []).gone)
        }
    }
}

/// The transfers running now: their host (for the per-host cap), app (for sharing the slots) and task (to stop one);
/// and the reserve, what the last turn chose to start as slots free.
///
/// The limits count transfers on the network. One whose body has ended gives its slot to the next while its file
/// is synced and its outcome recorded (`releaseSlot`): with many small files the sync and the queue's write are
/// most of a transfer's time, and the network sat idle through them. At most as many as the limit finish so at
/// once, each on a thread of its own (the blocking pool has twice the limit's threads).
final class RunningTransfers: Sendable {
    private struct Entry {
        var host: String
        var app: String
        /// Nil until `attach`.
        var task: Task<Void, Never>?
        /// A cancel that came before the task was attached.
        var cancelled = false
        /// False once its body ended: it no longer counts toward the limits.
        var holdsSlot = true
    }

    /// A download the last turn chose beyond the free slots (`Scheduler.turn`), with what its transfer needs.
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

    /// The counts are kept as transfers come and go, so that each call holds the lock for a few steps: every
    /// transfer's end and every turn take it, and a count made by walking the entries under it showed in profiles
    /// as 16 transfer threads spinning on the lock.
    private struct State {
        var entries: [String: Entry] = [:]
        var slotsTaken = 0
        var finishing = 0
        /// Slots taken per host, and per app.
        var perHost: [String: Int] = [:]
        var perApp: [String: Int] = [:]
        /// Not running, not marked moving: started in this order as slots free.
        var reserved: [Reserved] = []
        /// Started from the reserve, their rows not yet marked moving: the next turn marks them. Until then the queue
        /// says they wait, so a turn that reads them so must not start them again, even once they have ended.
        var startedEarly: [String: QueuedDownload] = [:]

        /// Whether the download runs, or ran without its row saying so yet.
        func holds(_ uniqueIdentifier: String) -> Bool {
            entries[uniqueIdentifier] != nil || startedEarly[uniqueIdentifier] != nil
        }

        mutating func add(_ uniqueIdentifier: String, host: String, app: String) {
            entries[uniqueIdentifier] = Entry(host: host, app: app)
            slotsTaken += 1
            perHost[host, default: 0] += 1
            perApp[app, default: 0] += 1
        }

        mutating func freeSlot(of entry: Entry) {
            slotsTaken -= 1
            perHost[entry.host, default: 1] -= 1
            if perHost[entry.host] == 0 { perHost[entry.host] = nil }
            perApp[entry.app, default: 1] -= 1
            if perApp[entry.app] == 0 { perApp[entry.app] = nil }
        }
    }

    private let state = Mutex(State())

    var isEmpty: Bool { state.withLock { $0.entries.isEmpty } }
    var reservedCount: Int { state.withLock { $0.reserved.count } }
    var tasks: [Task<Void, Never>] { state.withLock { $0.entries.values.compactMap(\.task) } }

    /// Their unique identifiers (with those started from the reserve that a turn has yet to mark moving), and how
    /// many of those holding a slot run per host and per app.
    func current() -> (Set<String>, perHost: [String: Int], perApp: [String: Int]) {
        state.withLock { (Set($0.entries.keys).union($0.startedEarly.keys), $0.perHost, $0.perApp) }
    }

    /// How many hold a slot.
    var slotsTaken: Int { state.withLock { $0.slotsTaken } }

    /// Records a transfer as running before its task exists (the task removes it when it ends); false, changing
    /// nothing, when the reserve started it already (while a turn chose it from the queue as it was).
    @discardableResult
    func add(_ uniqueIdentifier: String, host: String, app: String) -> Bool {
        state.withLock { state in
            guard !state.holds(uniqueIdentifier) else { return false }
            state.add(uniqueIdentifier, host: host, app: app)
            return true
        }
    }

    /// Replaces the reserve, leaving out what runs already.
    func reserve(_ downloads: [Reserved]) {
        state.withLock { state in
            state.reserved = downloads.filter { !state.holds($0.download.uniqueIdentifier) }
        }
    }

    func dropReserve() {
        state.withLock { $0.reserved = [] }
    }

    /// Takes the first reserved download that fits the free slots and records it as running (as `add`), to be
    /// marked moving by the next turn (`takeStartedEarly`). Its copy says what the mark will write.
    func takeReserved(_ settings: HostEngine.Settings) -> Reserved? {
        state.withLock { state in
            guard state.slotsTaken < settings.maximumConcurrentTransfers else { return nil }
            // The first that fits, in place: the reserve is deeper than the limit, and filtering it into a copy (an
            // entry carries a row, an app and its policy), or asking of each entry whether it runs, at every freed
            // slot showed in profiles. What a turn started meanwhile is no longer reserved: dropped when met (one
            // behind the first that fits stays counted in `reservedCount` until the next turn replaces the reserve).
            var index = state.reserved.startIndex
            while index < state.reserved.endIndex {
                if state.holds(state.reserved[index].download.uniqueIdentifier) {
                    state.reserved.remove(at: index)
                } else if state.perHost[state.reserved[index].download.host, default: 0]
                    < settings.maximumTransfersPerHost
                {
                    break
                } else {
                    index += 1
                }
            }
            guard index < state.reserved.endIndex else { return nil }
            var next = state.reserved.remove(at: index)
            next.download.state = .downloading
            next.download.attempts += 1
            next.download.retryAt = nil
            state.add(next.download.uniqueIdentifier, host: next.download.host, app: next.download.appIdentifier)
            state.startedEarly[next.download.uniqueIdentifier] = next.download
            return next
        }
    }

    /// The transfers started from the reserve since the last call, for the caller's transaction to mark moving: it
    /// must do so before it reads the queue.
    func takeStartedEarly() -> [QueuedDownload] {
        state.withLock { state in
            defer { state.startedEarly = [:] }
            return Array(state.startedEarly.values)
        }
    }

    /// Gives a transfer added by `add` its task: cancelled at once when a cancel came first; nothing when the task
    /// has ended already.
    func attach(_ uniqueIdentifier: String, _ task: Task<Void, Never>) {
        let cancelled = state.withLock { state -> Bool in
            guard state.entries[uniqueIdentifier] != nil else { return false }
            state.entries[uniqueIdentifier]?.task = task
            return state.entries[uniqueIdentifier]!.cancelled
        }
        if cancelled { task.cancel() }
    }

    func remove(_ uniqueIdentifier: String) {
        state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: uniqueIdentifier) else { return }
            if entry.holdsSlot { state.freeSlot(of: entry) } else { state.finishing -= 1 }
        }
    }

    func cancel(_ uniqueIdentifier: String) {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.reserved.removeAll { $0.download.uniqueIdentifier == uniqueIdentifier }
            state.entries[uniqueIdentifier]?.cancelled = true
            return state.entries[uniqueIdentifier]?.task
        }
        task?.cancel()
    }

    /// Frees a transfer's slot once its body ended, unless as many as the limit are finishing already; true when
    /// it did.
    func releaseSlot(_ uniqueIdentifier: String, limit: Int) -> Bool {
        state.withLock { state in
            guard let entry = state.entries[uniqueIdentifier], entry.holdsSlot, state.finishing < limit else {
                return false
            }
            state.entries[uniqueIdentifier]?.holdsSlot = false
            state.freeSlot(of: entry)
            state.finishing += 1
            return true
        }
    }

    /// Whether a download could start now: a free slot, and a free slot for its host (foreground ones always can).
    func couldStart(_ download: QueuedDownload, _ settings: HostEngine.Settings) -> Bool {
        download.foreground
            || state.withLock { state in
                state.slotsTaken < settings.maximumConcurrentTransfers
                    && state.perHost[download.host, default: 0] < settings.maximumTransfersPerHost
            }
    }
}
