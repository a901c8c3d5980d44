import Service
import Testing

/// The service's waiting primitive.
@Suite struct SignalTests {
    @Test func aFireWithNobodyWaitingIsKeptForTheNextWait() async {
        let signal = Signal()
        signal.fire()
        let start = ContinuousClock.now
        await signal.wait(for: .seconds(30))
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test func aFireWakesEveryWaiter() async {
        let signal = Signal()
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { await signal.wait(for: .seconds(30)) } }
            // Fired again until every waiter has registered and woken; each fire wakes all that wait.
            group.addTask {
                while !Task.isCancelled, ContinuousClock.now - start < .seconds(20) {
                    signal.fire()
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            for _ in 0..<3 { await group.next() }
            group.cancelAll()
        }
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    @Test func aWaitEndsAtItsTimeoutOrWhenCancelled() async {
        let signal = Signal()
        let start = ContinuousClock.now
        await signal.wait(for: .milliseconds(50))
        #expect(ContinuousClock.now - start >= .milliseconds(50))

        let waiter = Task { await signal.wait(for: .seconds(30)) }
        try? await Task.sleep(for: .milliseconds(20))
        waiter.cancel()
        await waiter.value
        #expect(ContinuousClock.now - start < .seconds(10))
    }
}
