import Foundation
import Testing

/// `@Suite(.ownThreads)`: each test of the suite runs on threads of its own instead of Swift's cooperative pool, and
/// at most `OwnThreadsTrait.width` such tests run at once.
///
/// Most tests block a thread while they wait (a process's exit, a socket, a server's start), and swift-testing runs
/// every test as a task on the cooperative pool, one thread per core. In a parallel run on two cores the first two
/// blocking tests held both threads and nothing else ran, the engines under test included. On threads of its own, a
/// test's blocking waits hold only its own threads; the pool stays free for the code under test. The width keeps a
/// parallel run from starting every test at once (dozens of daemons, extensions and servers on two cores would push
/// the tests that bound a wait past their bounds). A serial run (`--no-parallel`) is unchanged.
public struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    /// Tests on their own threads at once: `BAHOST_TEST_WIDTH`, else two per core.
    public static let width: Int = {
        if let text = ProcessInfo.processInfo.environment["BAHOST_TEST_WIDTH"], let width = Int(text), width > 0 {
            return width
        }
        return 2 * ProcessInfo.processInfo.activeProcessorCount
    }()

    static let admission = Admission(width: width)

    /// [swift-testing's task] Runs one test (or one case of a parameterized test) on a `TestThreads` of its own,
    /// once the admission lets it in (with no other test, for one marked `.alone`); a suite itself is only a scope
    /// for its tests.
    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard !test.isSuite else { return try await function() }
        let alone = test.traits.contains { $0 is AloneTrait }
        await Self.admission.enter(alone: alone)
        let threads = TestThreads()
        defer { threads.finish() }
        do {
            try await withTaskExecutorPreference(threads) { try await function() }
        } catch {
            await Self.admission.leave(alone: alone)
            throw error
        }
        await Self.admission.leave(alone: alone)
    }

    /// Lets in at most `width` tests at once, or one alone, in the order they came.
    actor Admission {
        let width: Int
        private var running = 0
        private var aloneRunning = false
        private var waiting: [(alone: Bool, continuation: CheckedContinuation<Void, Never>)] = []

        init(width: Int) { self.width = width }

        func enter(alone: Bool) async {
            if waiting.isEmpty && fits(alone) {
                admit(alone)
                return
            }
            await withCheckedContinuation { waiting.append((alone, $0)) }
        }

        /// Frees the place, then lets in whoever waits first, as long as they fit.
        func leave(alone: Bool) {
            if alone { aloneRunning = false } else { running -= 1 }
            while let next = waiting.first, fits(next.alone) {
                waiting.removeFirst()
                admit(next.alone)
                next.continuation.resume()
            }
        }

        private func fits(_ alone: Bool) -> Bool {
            !aloneRunning && (alone ? running == 0 : running < width)
        }

        private func admit(_ alone: Bool) {
            if alone { aloneRunning = true } else { running += 1 }
        }
    }
}

/// `@Test(.alone)`, in a suite with `.ownThreads`: the test runs while no other test on threads of its own does (the
/// suites without `.ownThreads` are values and parsers, quick and small). For a test that measures the whole
/// process (its resident memory), which the daemons and servers of other tests would add to, and for one that loads
/// the machine for seconds (a download filling a link and the disk), whose load would stretch the bounded waits of
/// the others.
public struct AloneTrait: TestTrait {}

extension Trait where Self == AloneTrait {
    /// No other test of the process at once (`AloneTrait`).
    public static var alone: Self { Self() }
}

extension Trait where Self == OwnThreadsTrait {
    /// Each test on threads of its own, off Swift's cooperative pool (`OwnThreadsTrait`).
    public static var ownThreads: Self { Self() }
}

/// The executor a test runs on: its jobs run on threads that belong to the test alone. A job goes to an idle
/// thread, else to a new one, so that a job blocked in a wait never holds back another (the test's `async let`
/// children run beside it, as they would on the pool). Threads end when the test has and none has a job left.
public final class TestThreads: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var idle = 0
    private var finished = false

    public init() {}

    /// [any thread]
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        // More jobs queued than idle threads to take them: the new one needs a thread of its own.
        let needsThread = jobs.count > idle
        if !needsThread { condition.signal() }
        condition.unlock()
        if needsThread {
            let thread = Thread { [self] in work() }
            thread.name = "test"
            thread.start()
        }
    }

    /// [the test's task, at its end] Idle threads end; a job that still comes gets a thread and runs.
    func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// [a thread of this executor]
    private func work() {
        condition.lock()
        while true {
            while jobs.isEmpty && !finished {
                idle += 1
                condition.wait()
                idle -= 1
            }
            guard !jobs.isEmpty else { break }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
            condition.lock()
        }
        condition.unlock()
    }
}
