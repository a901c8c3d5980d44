import CHostSupport
import Foundation
import Vocabulary

/// The blocking pool: the named threads where whatever blocks runs, so that nothing blocks Swift's cooperative pool
/// (one thread per core: a few waits there stall every other task).
///
/// Two kinds of work, one pool:
/// - **Jobs** (it is a `TaskExecutor`): what waits for the disk or the queue's single writer, from the end of a
///   transfer's body to its outcome (`fsync`, verification, the rename, the queue's write), a resume's bytes hashed
///   or a file truncated before one. The pool keeps `threads` threads for them, which the engine sizes to its
///   transfers.
/// - **Long work** (`run`, `execute`): what holds a thread for as long as it lasts (an extension's window, up to its
///   budget; a pack's install; an archive unpacked while it downloads). Each piece in flight is owed a thread beyond
///   those `threads`: an idle one, else a new one. Long work thus never takes a thread the transfers wait for. A
///   thread more than is owed ends once it has idled for `linger`.
///
/// Any thread takes any work, long work first; only the count is kept. Owner: `HostEngine` (made by its
/// `init`); `HostEngine.shutdown` stops it, last.
public final class BlockingPool: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    /// Under `condition`, as is everything below. Long work is taken first: it has a thread owed, and a window's
    /// start must not wait behind the jobs.
    private var longWork: [@Sendable () -> Void] = []
    private var jobs: [UnownedJob] = []
    private var idle = 0
    private var running = 0
    /// Long work submitted and not yet ended: each is owed a thread beyond `threads`.
    private var long = 0
    /// Long work running now.
    private var busyLong = 0
    /// `shutdown` was called: threads end once nothing waits.
    private var stopping = false
    /// `shutdown` returned: what comes later runs elsewhere.
    private var ended = false
    private var stopped: [CheckedContinuation<Void, Never>] = []
    private let threads: Int
    private let linger: Duration
    private let name: String

    /// Starts `threads` threads (at least one) named `name` (at most 15 bytes, the OS's bound); a thread beyond those
    /// that long work is owed ends once it has idled for `linger`.
    public init(threads: Int, name: String = "bahost-blocking", linger: Duration = .seconds(10)) {
        self.threads = max(1, threads)
        self.linger = linger
        self.name = name
        condition.lock()
        for _ in 0..<self.threads { startThread() }
        condition.unlock()
    }

    /// [any thread] A job enqueued once the pool has stopped runs on the global executor: a late one must not hang.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        guard !ended else {
            condition.unlock()
            return globalConcurrentExecutor.enqueue(job)
        }
        jobs.append(job)
        if idle > 0 { condition.signal() }
        condition.unlock()
    }

    /// [any thread] Runs `work`, which may block for as long as it lasts, on a thread no job waits for. Work
    /// submitted once the pool has stopped runs on a thread of its own: a late window must not hang either.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        condition.lock()
        guard !ended else {
            condition.unlock()
            let name = name
            return Thread {
                bahost_name_thread(name)
                work()
            }.start()
        }
        long += 1
        longWork.append(work)
        if running < threads + long {
            startThread()
        } else if idle > 0 {
            condition.signal()
        }
        condition.unlock()
    }

    /// [any task] Runs `body` as long work (`execute`) and returns what it returned.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            execute { continuation.resume(with: Result { try body() }) }
        }
    }

    /// [any task] Stops the pool once every job submitted has run, and returns when only long work still holds a
    /// thread. That is not waited for (a window ends within its budget on its own, and cannot be hurried); each
    /// such thread ends when its work does.
    public func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            stopping = true
            stopped.append(continuation)
            condition.broadcast()
            let resumed = endIfStopped()
            condition.unlock()
            for continuation in resumed { continuation.resume() }
        }
    }

    /// The pool's threads now, for tests. [any thread]
    @_spi(Testing) public var threadCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return running
    }

    /// Under `condition`.
    private func startThread() {
        running += 1
        let thread = Thread { [self] in work() }
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Under `condition`: once stopping, when no job is left to run or running, the pool has ended; returns the
    /// `shutdown` calls to resume.
    private func endIfStopped() -> [CheckedContinuation<Void, Never>] {
        guard stopping, !ended, running == busyLong, jobs.isEmpty, longWork.isEmpty else { return [] }
        ended = true
        defer { stopped = [] }
        return stopped
    }

    /// [a pool thread] Takes work until the pool stops with nothing left, or until it has idled `linger` while more
    /// threads run than the jobs and the long work are owed.
    private func work() {
        bahost_name_thread(name)
        let executor = asUnownedTaskExecutor()
        condition.lock()
        while true {
            if !longWork.isEmpty {
                let body = longWork.removeFirst()
                busyLong += 1
                condition.unlock()
                body()
                condition.lock()
                busyLong -= 1
                long -= 1
            } else if !jobs.isEmpty {
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: executor)
                condition.lock()
            } else if stopping {
                break
            } else if running > threads + long {
                idle += 1
                let woken = condition.wait(until: Date.now.addingTimeInterval(linger.inSeconds))
                idle -= 1
                if !woken, jobs.isEmpty, longWork.isEmpty, running > threads + long { break }
            } else {
                idle += 1
                condition.wait()
                idle -= 1
            }
        }
        running -= 1
        let resumed = endIfStopped()
        condition.unlock()
        for continuation in resumed { continuation.resume() }
    }
}
