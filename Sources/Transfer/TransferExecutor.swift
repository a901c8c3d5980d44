import NIOCore
import NIOPosix

/// The threads where transfers wait: from the end of a body to the outcome (`fsync`, verification, the rename), and
/// whatever waits for the disk or the queue's single writer before it.
///
/// On Swift's cooperative pool, which has one thread per core, a few waiting transfers stall every other task, the
/// HTTP client's included; many small files then ran at a fraction of the network's speed (Benchmarks). Here
/// waiting costs only a thread of this pool.
public final class TransferExecutor: TaskExecutor {
    private let pool: NIOThreadPool

    /// Starts `threads` threads (at least one).
    public init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        pool.submit { _ in job.runSynchronously(on: executor) }
    }

    /// Stops the threads once what was submitted has run.
    public func shutdown() async {
        try? await pool.shutdownGracefully()
    }
}

/// Runs a task's jobs on one event loop: where a transfer runs until its body ends, so that its request, its head and
/// its body are handled by the thread that reads its socket, without a thread wake-up between them
/// (docs/PERFORMANCE.md, "A transfer on its event loop until its body ends"). Nothing may wait there.
public final class EventLoopExecutor: TaskExecutor {
    /// The loop every job runs on.
    public let loop: any EventLoop

    public init(_ loop: any EventLoop) { self.loop = loop }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        loop.execute { job.runSynchronously(on: executor) }
    }
}
