@testable import Delivery
import Testing

/// One app's delivery state as a value: when its completions are due, when claims are settled, how failures back
/// off and when a drain stops waiting, with instants given instead of a clock.
@Suite struct AppDeliveryTests {
    let start = ContinuousClock.now
    let delay = Duration.seconds(2)

    func queue(_ pending: Int, active: Bool = true, atOnce: Bool = false) -> AppDelivery.Queue {
        AppDelivery.Queue(pendingCompletions: pending, hasActiveDownloads: active, receivesAtOnce: atOnce)
    }

    /// For the extension, completions wait to be batched while the app's transfers run: due when the batch is full,
    /// when the transfers are done, or when the oldest has waited the delay; a delegate or a pack installer gets
    /// them at once; nothing pending is never due, and forgets the wait.
    @Test func completionsAreDueAtOnceOrWhenTheBatchIsReady() {
        var app = AppDelivery()
        #expect(app.phase == .idle)
        app.recorded(at: start)
        #expect(app.phase == .batching(since: start))
        app.recorded(at: start + .seconds(1))
        #expect(app.phase == .batching(since: start), "the oldest counts")

        var waiting = app
        let beforeTheDelay = waiting.isDue(queue(1), delay: delay, at: start + .seconds(1))
        #expect(!beforeTheDelay)
        let afterTheDelay = waiting.isDue(queue(1), delay: delay, at: start + delay)
        #expect(afterTheDelay)
        let transfersDone = waiting.isDue(queue(1, active: false), delay: delay, at: start)
        #expect(transfersDone)
        let batchFull = waiting.isDue(queue(BatchPace.first), delay: delay, at: start)
        #expect(batchFull)
        let atOnce = waiting.isDue(queue(1, atOnce: true), delay: delay, at: start)
        #expect(atOnce)
        let nonePending = waiting.isDue(queue(0), delay: delay, at: start + delay)
        #expect(!nonePending && waiting.phase == .idle)

        // A completion the queue shows before `recorded` was heard starts the wait itself.
        var unheard = AppDelivery()
        let unheardDue = unheard.isDue(queue(1), delay: delay, at: start)
        #expect(!unheardDue)
        #expect(unheard.phase == .batching(since: start))
        #expect(unheard.nextDeadline(delay: delay, at: start) == start + delay)
    }

    /// Held claims are settled at once the first time, then once a check interval; claims read before the last
    /// delivery ended (its own window's, maybe) start nothing; none held forgets the check.
    @Test func claimsAreSettledAtOnceThenAtTheirInterval() {
        var app = AppDelivery()
        let firstSeen = app.claimsDue(held: true, readSince: start, at: start)
        #expect(firstSeen)
        app.claimsSettled(stillHeld: true, at: start)
        let withinInterval = app.claimsDue(held: true, readSince: start, at: start + .milliseconds(500))
        #expect(!withinInterval)
        let afterInterval = app.claimsDue(held: true, readSince: start, at: start + AppDelivery.claimCheckInterval)
        #expect(afterInterval)
        #expect(app.nextDeadline(delay: delay, at: start) == start + AppDelivery.claimCheckInterval)
        let noneHeld = app.claimsDue(held: false, readSince: start, at: start + .seconds(5))
        #expect(!noneHeld)
        #expect(app.nextDeadline(delay: delay, at: start) == nil)

        app.delivering = true
        #expect(app.phase == .delivering && !app.mayStart(at: start))
        _ = app.ended(error: nil, draining: false, at: start + .seconds(1))
        let readBeforeEnd = app.claimsDue(held: true, readSince: start, at: start + .seconds(2))
        #expect(!readBeforeEnd, "read before it ended")
        let readAfterEnd = app.claimsDue(held: true, readSince: start + .seconds(1), at: start + .seconds(2))
        #expect(readAfterEnd)
    }

    /// A failed delivery backs off 1 s, doubling to a minute; a success forgets the failures; a drain stops waiting
    /// after three in a row and says the last error; a retry time past is no deadline.
    @Test func failuresBackOffAndADrainStopsWaiting() {
        var app = AppDelivery()
        app.delivering = true
        app.deliveryStarted()
        let firstFailure = app.ended(error: "disk full", draining: true, at: start)
        #expect(firstFailure == .retry(after: .seconds(1)))
        #expect(app.phase == .backingOff(until: start + .seconds(1)))
        #expect(!app.mayStart(at: start + .milliseconds(999)) && app.mayStart(at: start + .seconds(1)))
        #expect(app.nextDeadline(delay: delay, at: start) == start + .seconds(1))
        #expect(app.nextDeadline(delay: delay, at: start + .seconds(2)) == nil)
        let secondFailure = app.ended(error: "disk full", draining: true, at: start)
        #expect(secondFailure == .retry(after: .seconds(2)))
        #expect(app.leftPending(draining: true) == nil)
        let thirdFailure = app.ended(error: "disk still full", draining: true, at: start)
        #expect(thirdFailure == .leftPending)
        #expect(app.leftPending(draining: true) == "disk still full" && app.leftPending(draining: false) == nil)
        let success = app.ended(error: nil, draining: true, at: start)
        #expect(success == .delivered)
        #expect(app.phase == .idle && app.mayStart(at: start) && app.leftPending(draining: true) == nil)
        #expect((1...9).map(AppDelivery.retryDelay(afterFailures:)).last == .seconds(60))
    }
}
