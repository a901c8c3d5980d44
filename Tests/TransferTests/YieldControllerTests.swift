@testable import Transfer
import Testing

/// The background transfers' delay-based controller as a value: fed made-up round trips, no socket, no clock.
@Suite struct YieldControllerTests {
    let start = ContinuousClock.now

    /// Feeds `controller` a sample every 20 ms from `t0` for `seconds`, with the RTT `rtt(t)`; returns the windows
    /// it decided.
    func run(_ controller: inout YieldController, from t0: Double, seconds: Double, rtt: (Double) -> Double) -> [Int] {
        var windows: [Int] = []
        var t = t0
        while t < t0 + seconds {
            let now = start.advanced(by: .milliseconds(Int64(t * 1000)))
            if let window = controller.sample(rtt: .microseconds(Int64(rtt(t) * 1_000_000)), now: now) {
                windows.append(window)
            }
            t += 0.02
        }
        return windows
    }

    @Test func withNoQueueTheWindowGrowsToTheCeiling() {
        var controller = YieldController()
        let windows = run(&controller, from: 0, seconds: 5, rtt: { _ in 0.020 })
        #expect(windows.first == Int(YieldController.initialWindow))
        #expect(windows == windows.sorted(), "\(windows)")
        #expect(windows.last == Int(YieldController.ceiling), "\(windows)")
    }

    @Test func aQueueBeyondTheTargetHalvesTheWindowEachIntervalDownToTheFloor() {
        var controller = YieldController()
        _ = run(&controller, from: 0, seconds: 3, rtt: { _ in 0.020 })
        let before = controller.window
        // The user's download fills the router's queue: 200 ms more.
        let windows = run(&controller, from: 3, seconds: 2, rtt: { _ in 0.220 })
        // Within seven decisions: the current delay is the least of the last half second.
        #expect(Double(windows.prefix(7).min() ?? 0) <= before * 0.5 + 1, "\(windows)")
        #expect(Double(windows.last ?? 0) == YieldController.floor, "\(windows)")
        #expect(controller.queueingDelay == .milliseconds(200))
    }

    @Test func aQueueWithinTheTargetStillGrowsAndOneAboveItShrinksInProportion() {
        var controller = YieldController()
        _ = run(&controller, from: 0, seconds: 1, rtt: { _ in 0.020 })
        let window = controller.window
        let within = run(&controller, from: 1, seconds: 0.2, rtt: { _ in 0.026 })
        #expect(Double(within.last ?? 0) > window)
        let grown = controller.window
        // 18 ms of queue against a target of 12: half the target over, a quarter off each interval, once the half
        // second's filter holds only such samples.
        let over = run(&controller, from: 1.2, seconds: 1, rtt: { _ in 0.038 })
        #expect(Double(over.last ?? 0) < grown)
        #expect(zip(over, over.dropFirst()).allSatisfy { Double($1) >= Double($0) * 0.75 - 1 }, "\(over)")
    }

    @Test func theBaseDelayIsTheLeastOfTheLastTwoMinutes() {
        var controller = YieldController()
        _ = run(&controller, from: 0, seconds: 1, rtt: { _ in 0.010 })
        #expect(controller.baseDelay == .milliseconds(10))
        // Three minutes on a path 30 ms longer: the old minimum ages out, and the new path is the base.
        _ = run(&controller, from: 1, seconds: 180, rtt: { _ in 0.040 })
        #expect(controller.baseDelay == .milliseconds(40))
        #expect(controller.queueingDelay == .zero)
    }

    @Test func noSampleYetLeavesTheWindowWhereItIs() {
        var controller = YieldController()
        let windows = run(&controller, from: 0, seconds: 1, rtt: { _ in 0 })
        #expect(Set(windows) == [Int(YieldController.initialWindow)])
    }
}
