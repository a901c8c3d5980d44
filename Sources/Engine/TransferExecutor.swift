import NIOPosix

/// The threads transfers run on.
///
/// A transfer blocks its thread: on the disk (writes, `fsync`, renames) and on the queue's single writer. On Swift's
/// cooperative pool, which has one thread per core, a few such transfers stall every other task, the HTTP client's
/// included; many small files then ran at a fraction of the network's speed (Benchmarks). Here each transfer's task
/// runs on a pool of its own, one thread per concurrent transfer, and waiting costs only that thread.
final class TransferExecutor: TaskExecutor {
    private let pool: NIOThreadPool

    init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: max(1, threads))
        pool.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        pool.submit { _ in job.runSynchronously(on: executor) }
    }

    func shutdown() async {
        try? await pool.shutdownGracefully()
    }
}
