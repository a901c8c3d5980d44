import Delivery
import ExtensionRuntime
import Foundation
import Queue
import Testing
import Vocabulary

/// How many completions a delivery window gets, from how the last one went.
@Suite struct BatchPaceTests {
    let limits = WindowLimits(budget: .seconds(8), grace: .seconds(1), memoryBytes: 64 << 20)

    @Test func aFastWindowEarnsTheLargestBatch() {
        var pace = BatchPace()
        #expect(pace.size == BatchPace.first)
        pace.record(.returned, elapsed: .milliseconds(10), completed: 32, limits: limits)
        #expect(pace.size == BatchPace.maximum)
    }

    /// A quarter of the budget (2 s) at 100 ms a callback is 20 callbacks; at 5 s a callback, one.
    @Test func aSlowWindowKeepsWhatAQuarterOfTheBudgetCovers() {
        var pace = BatchPace()
        pace.record(.returned, elapsed: .milliseconds(3200), completed: 32, limits: limits)
        #expect(pace.size == 20)
        pace.record(.returned, elapsed: .seconds(5), completed: 1, limits: limits)
        #expect(pace.size == 1)
    }

    /// A window that ran out of time halves the batch, down to one; a crash says nothing about the pace.
    @Test func aWindowOutOfTimeHalvesTheBatchAndACrashKeepsIt() {
        var pace = BatchPace()
        pace.record(.budgetExceeded(willTerminateReturned: true), elapsed: .seconds(9), completed: 3, limits: limits)
        #expect(pace.size == 16)
        pace.record(.crashed(signal: SIGSEGV), elapsed: .milliseconds(5), completed: 0, limits: limits)
        #expect(pace.size == 16)
        let outOfTime = StopReason.budgetExceeded(willTerminateReturned: false)
        for _ in 0..<10 { pace.record(outOfTime, elapsed: .seconds(9), completed: 0, limits: limits) }
        #expect(pace.size == 1)
    }

    /// The engine compares an app's pending completions with its batch, so the queue must count at least as far as
    /// the largest batch: a count stopped short would never call a full batch due.
    @Test func theQueueCountsPendingCompletionsAsFarAsTheLargestBatch() {
        #expect(QueueStore.Snapshot.countLimit >= BatchPace.maximum)
    }
}
