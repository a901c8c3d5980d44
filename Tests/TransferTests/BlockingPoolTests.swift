import Foundation
import Synchronization
import Testing
import TestSupport
@_spi(Testing) import Transfer

/// The blocking pool with real threads: long work (a window, an unpack) holds a thread of its own beyond the jobs',
/// spare threads end, and a stop waits for every job but not for long work.
@Suite struct BlockingPoolTests {
    /// A gate that work on the pool's threads blocks on until the test opens it.
    final class Gate: Sendable {
        private let opened = DispatchSemaphore(value: 0)
        private let arrivals = Mutex(0)

        var arrived: Int { arrivals.withLock { $0 } }
        /// [a pool thread] Counts the arrival, then waits (at most 10 s) for `open`.
        func pass() -> Bool {
            arrivals.withLock { $0 += 1 }
            let passed = opened.wait(timeout: .now() + 10) == .success
            opened.signal()
            return passed
        }
        func open() { opened.signal() }
    }

    /// The calling thread's name (not callable from async code directly).
    static func threadName() -> String? { Thread.current.name }

    @Test func longWorkNeverTakesTheThreadAJobNeeds() async throws {
        let pool = BlockingPool(threads: 1, name: "pool-test")
        let gate = Gate()
        async let first = pool.run { gate.pass() }
        async let second = pool.run { gate.pass() }
        // Both pieces of long work wait at the gate at once: each has a thread.
        #expect(try await eventually { gate.arrived == 2 })
        #expect(pool.threadCount == 3)
        // A job still finds the pool's own thread free.
        let name = await withTaskExecutorPreference(pool) { Self.threadName() }
        #expect(name == "pool-test")
        // And a third piece of long work gets a thread too, while the two wait.
        let viaRun = try await pool.run { Self.threadName() }
        #expect(viaRun == "pool-test")
        gate.open()
        let (passedFirst, passedSecond) = try await (first, second)
        #expect(passedFirst && passedSecond)
        await pool.shutdown()
    }

    @Test func aSpareThreadEndsAfterItsLinger() async throws {
        let pool = BlockingPool(threads: 2, linger: .milliseconds(50))
        let gate = Gate()
        async let pieces = withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<3 { group.addTask { try await pool.run { gate.pass() } } }
            return try await group.allSatisfy { $0 }
        }
        #expect(try await eventually { gate.arrived == 3 })
        #expect(pool.threadCount == 5)
        gate.open()
        let passed = try await pieces
        #expect(passed)
        #expect(try await eventually { pool.threadCount == 2 })
        // Reused while lingering, or started again: long work always finds a thread.
        #expect(try await pool.run { Self.threadName() } == "bahost-blocking")
        await pool.shutdown()
    }

    @Test func aStopWaitsForTheJobsNotForLongWorkWhichEndsOnItsOwn() async throws {
        let pool = BlockingPool(threads: 2)
        let (window, jobGate) = (Gate(), Gate())
        pool.execute { _ = window.pass() }
        let job = Mutex(false)
        let started = Task(executorPreference: pool) {
            // Blocks its thread, as a job on this pool does.
            job.withLock { $0 = jobGate.pass() }
        }
        #expect(try await eventually { window.arrived == 1 && jobGate.arrived == 1 })
        let stopped = Mutex(false)
        let stop = Task {
            await pool.shutdown()
            stopped.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(!stopped.withLock { $0 }, "the stop returned while a job ran")
        jobGate.open()
        await stop.value
        // The job ran to its end; the window-like work still waits at its gate, on its thread.
        #expect(job.withLock { $0 })
        #expect(pool.threadCount == 1)
        window.open()
        #expect(try await eventually { pool.threadCount == 0 })
        await started.value
        // After the stop: long work runs on a thread of its own, a job on the global executor; neither hangs.
        #expect(try await pool.run { 7 } == 7)
        #expect(await withTaskExecutorPreference(pool) { 8 } == 8)
    }
}
