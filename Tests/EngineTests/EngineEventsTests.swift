@testable import Engine
import Synchronization
import Testing

/// The engine's one stream of events: what the loop takes, what its drains wait for. No queue, no transfer.
@Suite struct EngineEventsTests {
    let every: EngineEvents.Kinds = [.queueChanged, .turnNow, .reserveLow, .transferEnded]

    @Test func aPostBeforeTheLoopWaitsIsKeptAndTakenOnce() async {
        let events = EngineEvents()
        events.post(.queueChanged)
        let start = ContinuousClock.now
        #expect(await events.next(of: .wakingTheLoop, timeout: .seconds(30)) == .queueChanged)
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(await events.next(of: .wakingTheLoop, timeout: .milliseconds(50)) == [])
    }

    @Test func theLoopTakesOnlyWhatItWaitsFor() async {
        let events = EngineEvents()
        events.post(.transferEnded)
        #expect(await events.next(of: .wakingTheLoop, timeout: .milliseconds(50)) == [])
        events.post([.queueChanged, .turnNow])
        #expect(await events.next(of: [.turnNow, .reserveLow], timeout: .seconds(30)) == .turnNow)
        #expect(await events.next(of: every, timeout: .seconds(30)) == [.transferEnded, .queueChanged])
        #expect(await events.next(of: every, timeout: .milliseconds(50)) == [])
    }

    @Test func aDrainSeesAPostMadeBetweenItsMarkAndItsWaitButNotOneBefore() async {
        let events = EngineEvents()
        let before = events.mark()
        events.post(.transferEnded)
        let start = ContinuousClock.now
        await events.wait(for: .transferEnded, after: before, timeout: .seconds(30))
        #expect(ContinuousClock.now - start < .seconds(10))

        let after = events.mark()
        let waited = ContinuousClock.now
        await events.wait(for: .transferEnded, after: after, timeout: .milliseconds(100))
        #expect(ContinuousClock.now - waited >= .milliseconds(90))
        // The drain took nothing: the loop still finds the end.
        #expect(await events.next(of: every, timeout: .seconds(30)) == .transferEnded)
    }

    @Test func aPostWakesTheLoopAndEveryDrainWaitingForIt() async {
        let events = EngineEvents()
        let mark = events.mark()
        let start = ContinuousClock.now
        await withTaskGroup(of: EngineEvents.Kinds.self) { group in
            group.addTask { await events.next(of: .wakingTheLoop, timeout: .seconds(30)) }
            for _ in 0..<2 {
                group.addTask {
                    await events.wait(for: .transferEnded, after: mark, timeout: .seconds(30))
                    return .transferEnded
                }
            }
            // Posted again until every waiter has filed and woken; the loop takes only what it waits for.
            group.addTask {
                while !Task.isCancelled, ContinuousClock.now - start < .seconds(20) {
                    events.post([.queueChanged, .transferEnded])
                    try? await Task.sleep(for: .milliseconds(10))
                }
                return []
            }
            var woken: [EngineEvents.Kinds] = []
            for _ in 0..<3 { if let kinds = await group.next() { woken.append(kinds) } }
            group.cancelAll()
            #expect(woken.filter { $0 == .transferEnded }.count == 2)
            #expect(woken.contains(.queueChanged))
        }
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test func aWaitEndsAtItsTimeoutOrWhenItsTaskIsCancelled() async {
        let events = EngineEvents()
        let start = ContinuousClock.now
        #expect(await events.next(of: .wakingTheLoop, timeout: .milliseconds(50)) == [])
        #expect(ContinuousClock.now - start >= .milliseconds(40))

        let loop = Task { await events.next(of: .wakingTheLoop, timeout: .seconds(30)) }
        let drain = Task { await events.wait(for: .transferEnded, after: events.mark(), timeout: .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(20))
        let cancelled = ContinuousClock.now
        loop.cancel()
        drain.cancel()
        #expect(await loop.value == [])
        await drain.value
        #expect(ContinuousClock.now - cancelled < .seconds(10))
    }

    @Test func waitingForTransfersLooksAgainAtEachEndAndStopsWhenCancelled() async throws {
        let events = EngineEvents()
        let left = Mutex(3)
        let start = ContinuousClock.now
        let ender = Task {
            while left.withLock({ $0 }) > 0 {
                try? await Task.sleep(for: .milliseconds(20))
                left.withLock { $0 -= 1 }
                events.post(.transferEnded)
            }
        }
        try await events.waitForTransfers { left.withLock { $0 } > 0 }
        #expect(left.withLock { $0 } == 0)
        #expect(ContinuousClock.now - start < .seconds(2))
        await ender.value

        let waiter = Task { try await events.waitForTransfers { true } }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
    }
}
