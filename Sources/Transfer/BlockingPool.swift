import Foundation
import Synchronization

/// The blocking pool: threads where what waits for the disk or the queue's single writer runs, from the end of a
/// transfer's body to its outcome (`fsync`, verification, the rename, the queue's write), and a resume's bytes hashed
/// or a file truncated before one.
///
/// On Swift's cooperative pool, which has one thread per core, a few waiting transfers stall every other task;
/// many small files then ran at a fraction of the network's speed. Here waiting costs only a thread of this pool.
/// Owner: the engine's scheduler, which stops it (`shutdown`) after its transfers have ended.
public final class TransferExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    /// Under `condition`.
    private var jobs: [UnownedJob] = []
    private var idle = 0
    private var stopping = false
    private var running: Int

    /// Starts `threads` threads (at least one), named `name`.
    public init(threads: Int, name: String = "bahost-blocking") {
        running = max(1, threads)
        for _ in 0..<running {
            let thread = Thread { [self] in
                work()
            }
            thread.stackSize = 1 << 20
            thread.name = name
            thread.start()
        }
    }

    /// [any thread] A job enqueued once the pool has stopped runs on the global executor: a late one must not hang.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        guard running > 0 else {
            condition.unlock()
            return globalConcurrentExecutor.enqueue(job)
        }
        jobs.append(job)
        if idle > 0 { condition.signal() }
        condition.unlock()
    }

    private func work() {
        let executor = asUnownedTaskExecutor()
        condition.lock()
        while true {
            if let job = jobs.first {
                jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: executor)
                condition.lock()
            } else if stopping {
                break
            } else {
                idle += 1
                condition.wait()
                idle -= 1
            }
        }
        running -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Stops the threads once what was submitted has run, and waits for them. [not on the pool]
    public func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread { [self] in
                condition.lock()
                stopping = true
                condition.broadcast()
                while running > 0 { condition.wait() }
                condition.unlock()
                continuation.resume()
            }
        }
    }
}
