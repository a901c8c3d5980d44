import Foundation
import HostVocabulary
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
/// (`TransferOutcomes`), reads the queue and marks moving what its `TurnChoice` (a value: the limits, the slots
/// taken, the reserve's room) picks, in one transaction when there are outcomes. What happens to the slots then (the
/// turn's choice, a body's end, a task's end, a cancel) is an event for the `TransferSlots` state machine, whose
/// actions (start, cancel, wake) this carries out (`perform`).
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
    /// a deeper one lasts until the queue runs out (docs/performance/DECISIONS.md #14).
    static let reserveDepth = 4

    /// Records the outcomes that came since the last turn and starts what may start for `apps`; returns the queue as
    /// it was read (after what this recorded, before what it started). What it chooses beyond the free slots, up to
    /// `reserveDepth` times the limit, is reserved: started the moment a transfer's body ends (`slotFreed`), which
    /// the next turn then records. The last turn's reserve serves until this one's replaces it, so a reserved
    /// download waits for at most one turn's choice; one that both start (the reserve and the turn) runs once
    /// (`TransferSlots.handle`).
    ///
    /// Why a reserve: while many small files run, the engine is busy with turns almost all the time (each with its
    /// transaction), and a freed slot waited for the next one: time lost on every file, which shows as soon as the
    /// server is not on the same machine (docs/performance/DECISIONS.md #12).
    /// [engine loop]
    func turn(_ apps: Set<String>) throws -> QueueStore.Snapshot {
        let limits = context.settings.slotLimits
        var records: [String: (AppRecord, AppPolicy)] = [:]
        func record(_ id: String) throws -> (AppRecord, AppPolicy)? {
            // Each app read once a turn: its policy (its allow list canonicalized) serves every transfer it starts.
            if records[id] == nil, let app = try context.store.app(id) { records[id] = (app, app.policy) }
            return records[id]
        }
        var reserve: [QueuedDownload] = []
        let reserveLimit = limits.total * Self.reserveDepth
        try wakeWaitingForNetwork()
        // Hosts the machine has no path to wait for their probe: their downloads would only fail again. And what the
        // machine says of its network (metered, no connectivity, asleep) holds back the downloads it rules out.
        let offline = context.networkWaits.held()
        let conditions = context.networkWaits.conditions
        while true {
            let slots = running.slots
            var choice = TurnChoice(slots: slots, limits: limits, reserve: reserve, reserveLimit: reserveLimit)
            let (snapshot, started) = try writeTurn(
                apps: apps, excluding: running.current().0.union(reserve.map(\.uniqueIdentifier)),
                // Candidates turned away because their host filled up during this pass, with the reserve full:
                // another pass, with that host left out, may find others for the slots still free.
                saturatedHosts: offline.union(choice.reserveFull ? slots.saturatedHosts(limits) : []),
                running: slots.perApp, conditions: conditions, choice: &choice)
            reserve = choice.reserve
            // The slots record the chosen running and put the reserve in place before any of their tasks exists: a
            // transfer that ends at once then finds its successor in this turn's reserve, not the last one's.
            var chosen: [String: (AppRecord, AppPolicy)] = [:]
            for download in started + reserve {
                if let found = try record(download.appIdentifier) { chosen[download.uniqueIdentifier] = found }
            }
            perform(running.handle(
                .turnChose(
                    started: started.filter { chosen[$0.uniqueIdentifier] != nil },
                    reserve: reserve.filter { chosen[$0.uniqueIdentifier] != nil }),
                records: chosen))
            if !choice.turnedAway || choice.slotsFull || started.isEmpty { return snapshot }
        }
    }

    /// Makes due at once the downloads waiting for the network that `NetworkWaits` says may go: after a change to
    /// the network, every one; after a transfer reached its host, that host's. [engine loop]
    private func wakeWaitingForNetwork() throws {
        switch context.networkWaits.takeToWake() {
        case nil: break
        case .all: try context.store.wakeWaitingForNetwork()
        case .hosts(let hosts): try context.store.wakeWaitingForNetwork(hosts: hosts)
        }
    }

    /// Returns when the engine's next turn is due, once something woke it (`EngineEvents`): at once, unless the
    /// reserve lasts. While it does, the reserve starts the next transfers as slots free, and a turn is needed only to
    /// record what ended and deliver it; letting what ends gather until `turnPace` after `start` (the last turn's)
    /// makes one transaction and one delivery of several, where many small files had a turn for every one or two
    /// (docs/performance/DECISIONS.md #13). The reserve running low (`reserveLow`), or a wake that must not wait
    /// (`turnNow`: `EngineContext.wakeNow`), ends the wait. [engine loop]
    func paceNextTurn(since start: ContinuousClock.Instant) async {
        while running.reserveLasts(context.settings.slotLimits) && !Task.isCancelled {
            let elapsed = ContinuousClock.now - start
            guard elapsed < context.settings.turnPace else { return }
            let left = context.settings.turnPace - elapsed
            if await context.events.next(of: [.turnNow, .reserveLow], timeout: left).contains(.turnNow) { return }
        }
    }

    /// A transfer's body ended: its slot goes to the next reserved download, if one fits, and the engine looks
    /// again. [transfer thread] It only starts a task.
    func slotFreed(_ uniqueIdentifier: String) {
        perform(running.handle(.bodyEnded(uniqueIdentifier, limits: context.settings.slotLimits)))
    }

    /// Does what the slots decided. [the caller's thread, outside the slots' lock]
    private func perform(_ work: [RunningTransfers.Work]) {
        for item in work {
            switch item {
            case .start(let chosen): start(chosen)
            case .cancel(let task): task.cancel()
            case .wake(let reserveLow): context.events.post(reserveLow ? [.queueChanged, .reserveLow] : .queueChanged)
            }
        }
    }

    /// Starts the task of a download the slots recorded running (a turn's choice, or the reserve at a freed slot),
    /// before its task exists, so that the task's end always finds it; the task is made outside the lock, since making
    /// it may wake the transfer thread. [engine loop, or the transfer thread for a freed slot]
    private func start(_ chosen: RunningTransfers.Chosen) {
        let (download, app, policy) = (chosen.download, chosen.app, chosen.policy)
        let uniqueIdentifier = download.uniqueIdentifier
        // A transfer runs on a transfer thread until its body ends: the one this runs on, when a freed slot starts
        // it (`slotFreed`), so that its request is made without a thread hop.
        running.attach(uniqueIdentifier, Task(executorPreference: context.client.transferExecutor) { [context] in
            let job = TransferJob(
                context: context, queued: download, app: app, policy: policy, blocking: context.blocking
            ) { [weak self] in
                self?.slotFreed(uniqueIdentifier)
            }
            // An outcome is told once the next turn recorded it; a challenge is the engine's to answer (handed over
            // before the transfer counts as ended, so that the engine never sees neither at work).
            await job.run { ending in
                switch ending {
                case .outcome(let outcome)?:
                    context.outcomes.add(outcome)
                case .challenged(let challenge, let row, let otherwise)?:
                    context.challenges.answer(challenge, for: row, otherwise: otherwise, context: context)
                case nil:
                    break
                }
                self.running.remove(uniqueIdentifier)
                context.events.post(ending == nil ? [.queueChanged, .transferEnded] : .queueChanged)
            }
        })
    }

    /// Takes the outcomes waiting, writes them, reads the queue and marks what `choice` picks moving
    /// (`QueueStore.turn`); then tells the outcomes. Returns the snapshot and the downloads marked moving. A failure
    /// is the queue's: the outcomes' rows stay marked moving, and are queued again once nothing runs (`HostEngine`'s
    /// loop).
    private func writeTurn(
        apps: Set<String>, excluding: Set<String>, saturatedHosts: Set<String>, running: [String: Int],
        conditions: NetworkConditions, choice: inout TurnChoice
    ) throws -> (QueueStore.Snapshot, [QueuedDownload]) {
        var deciding = choice
        defer { choice = deciding }
        return try recordingOutcomes { rows, startedEarly in
            let (snapshot, started, gone) = try context.store.turn(
                recording: rows, startedEarly: startedEarly, now: Date(), apps: apps, excluding: excluding,
                saturatedHosts: saturatedHosts, running: running, conditions: conditions, choice: &deciding)
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
                context.events.post(.transferEnded)
            }
            throw error
        }
    }

    /// When the loop should look again at the latest: a waiting download's retry time, or a second from now.
    /// [engine loop]
    func nextWake(_ snapshot: QueueStore.Snapshot) -> Duration {
        guard let retry = snapshot.nextRetry else { return .seconds(1) }
        return min(.seconds(1), .milliseconds(max(0, Int64(retry.timeIntervalSinceNow * 1000))))
    }

    /// Stops every running transfer and waits for each to end, then records where each stopped (its partial file
    /// stays). [engine loop's caller, once the loop ended]
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
