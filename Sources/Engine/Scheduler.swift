import Foundation
import Queue
import Synchronization

/// Decides what runs next and starts it: best first (foreground, essential, priority, age), within the global and
/// per-host limits (foreground downloads, which the app waits for, are not held back by them), each transfer a
/// `TransferJob` on the transfer threads. It asks the queue only for as many downloads as it can start and marks
/// them started in one transaction, so a turn costs the same whatever the queue's length.
final class Scheduler: Sendable {
    private let context: EngineContext
    private let executor: TransferExecutor
    /// What happens to a completion the moment a transfer records one.
    private let completed: @Sendable (String) -> Void
    private var running: RunningTransfers { context.running }

    /// - Parameter completed: called with the app's identifier when a transfer ends with a completion to deliver.
    init(context: EngineContext, completed: @escaping @Sendable (String) -> Void) {
        self.context = context
        self.completed = completed
        // A thread for each transfer on the network and each finishing (`RunningTransfers.releaseSlot`).
        executor = TransferExecutor(threads: 2 * context.settings.maximumConcurrentTransfers)
    }

    var isIdle: Bool { running.isEmpty }

    /// Starts what may start for `apps`; returns the queue as it was read (before what this started).
    func turn(_ apps: Set<String>) throws -> QueueStore.Snapshot {
        let settings = context.settings
        while true {
            let (runningNow, perHost) = running.current()
            var count = running.slotsTaken
            var hosts = perHost
            let snapshot = try context.store.snapshot(
                now: Date(), apps: apps, excluding: runningNow,
                saturatedHosts: Set(hosts.filter { $0.value >= settings.maximumTransfersPerHost }.keys),
                backgroundLimit: settings.maximumConcurrentTransfers - count)
            // Candidates turned away because their host filled up during this pass: another pass, with that host
            // left out, may find others for the slots still free.
            var turnedAway = false
            var chosen: [QueuedDownload] = []
            for download in snapshot.runnable {
                guard download.foreground
                    || (count < settings.maximumConcurrentTransfers
                        && hosts[download.host, default: 0] < settings.maximumTransfersPerHost)
                else {
                    turnedAway = true
                    continue
                }
                count += 1
                hosts[download.host, default: 0] += 1
                chosen.append(download)
            }
            let started = try context.store.startTransfers(chosen)
            for download in started {
                guard let app = try context.store.app(download.appIdentifier) else { continue }
                start(TransferJob(context: context, queued: download, app: app))
            }
            if !turnedAway || count >= settings.maximumConcurrentTransfers || started.isEmpty { return snapshot }
        }
    }

    private func start(_ job: TransferJob) {
        let uniqueIdentifier = job.queued.uniqueIdentifier
        running.add(uniqueIdentifier, host: job.queued.host) {
            Task(executorPreference: executor) {
                let outcome = await job.run()
                self.running.remove(uniqueIdentifier)
                if case .completed = outcome { self.completed(job.queued.appIdentifier) }
                self.context.signal.fire()
                self.context.transferEnded.fire()
            }
        }
    }

    /// When the loop should look again at the latest: a waiting download's retry time, or a second from now.
    func nextWake(_ snapshot: QueueStore.Snapshot) -> Duration {
        guard let retry = snapshot.nextRetry else { return .seconds(1) }
        return min(.seconds(1), .milliseconds(max(0, Int64(retry.timeIntervalSinceNow * 1000))))
    }

    /// Stops every running transfer and waits for each to record where it stopped (its partial file stays).
    func shutdown() async {
        let tasks = running.tasks
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        await executor.shutdown()
    }
}

/// The transfers running now: their host (for the per-host cap) and task (to stop one).
///
/// The limits count transfers on the network. One whose body has ended gives its slot to the next while its file
/// is synced and its outcome recorded (`releaseSlot`): with many small files the sync and the queue's write are
/// most of a transfer's time, and the network sat idle through them. At most as many as the limit finish so at
/// once, each on a transfer thread of its own (`Scheduler`'s executor has twice the limit's threads).
final class RunningTransfers: Sendable {
    private struct Entry {
        var host: String
        var task: Task<Void, Never>
        /// False once its body ended: it no longer counts toward the limits.
        var holdsSlot = true
    }

    private let running = Mutex([String: Entry]())

    var isEmpty: Bool { running.withLock { $0.isEmpty } }
    var tasks: [Task<Void, Never>] { running.withLock { $0.values.map(\.task) } }

    /// Their unique identifiers, and how many of those holding a slot run per host.
    func current() -> (Set<String>, [String: Int]) {
        running.withLock { running in
            (Set(running.keys), Self.perHost(running))
        }
    }

    /// How many hold a slot.
    var slotsTaken: Int { running.withLock { $0.values.count(where: \.holdsSlot) } }

    /// Records a transfer as running before its task can end (the task removes it).
    func add(_ uniqueIdentifier: String, host: String, _ start: () -> Task<Void, Never>) {
        running.withLock { $0[uniqueIdentifier] = Entry(host: host, task: start()) }
    }

    func remove(_ uniqueIdentifier: String) {
        running.withLock { _ = $0.removeValue(forKey: uniqueIdentifier) }
    }

    func cancel(_ uniqueIdentifier: String) {
        running.withLock { $0[uniqueIdentifier]?.task.cancel() }
    }

    /// Frees a transfer's slot once its body ended, unless as many as the limit are finishing already; true when
    /// it did.
    func releaseSlot(_ uniqueIdentifier: String, limit: Int) -> Bool {
        running.withLock { running in
            guard running[uniqueIdentifier]?.holdsSlot == true,
                running.values.count(where: { !$0.holdsSlot }) < limit
            else { return false }
            running[uniqueIdentifier]?.holdsSlot = false
            return true
        }
    }

    /// Whether a download could start now: a free slot, and a free slot for its host (foreground ones always can).
    func couldStart(_ download: QueuedDownload, _ settings: HostEngine.Settings) -> Bool {
        download.foreground
            || running.withLock { running in
                running.values.count(where: \.holdsSlot) < settings.maximumConcurrentTransfers
                    && Self.perHost(running)[download.host, default: 0] < settings.maximumTransfersPerHost
            }
    }

    private static func perHost(_ running: [String: Entry]) -> [String: Int] {
        Dictionary(running.values.filter(\.holdsSlot).map { ($0.host, 1) }, uniquingKeysWith: +)
    }
}
