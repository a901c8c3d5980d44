@testable import Engine
import Foundation
import Testing

/// The hosts waiting for the network as a value: each rule checked with no queue, no clock and no network.
@Suite struct NetworkWaitsTests {
    let start = Date(timeIntervalSince1970: 1_000_000)

    @Test func probesComeSoonAfterAFirstFailureThenEveryFiveSecondsAtMost() {
        let delays = (1...8).map { NetworkWaits.probeDelay(failedProbes: $0) }
        #expect(delays == [.milliseconds(250), .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5), .seconds(5), .seconds(5)])
    }

    @Test func aHostWithNoPathIsHeldUntilItsProbeIsDue() {
        var waits = NetworkWaits()
        let next = waits.foundNoPath("cdn", now: start)
        #expect(next == start.addingTimeInterval(0.25))
        #expect(waits.held(now: start) == ["cdn"])
        #expect(waits.held(now: next).isEmpty)
        // Its probe fails too: the next waits longer.
        let later = waits.foundNoPath("cdn", now: next)
        #expect(later == next.addingTimeInterval(1))
        #expect(waits.hosts["cdn"]?.failedProbes == 2)
    }

    @Test func anotherTransferFailingBeforeTheProbeKeepsThePlannedProbe() {
        var waits = NetworkWaits()
        let next = waits.foundNoPath("cdn", now: start)
        let second = waits.foundNoPath("cdn", now: start.addingTimeInterval(0.1))
        #expect(second == next)
        #expect(waits.hosts["cdn"]?.failedProbes == 1)
    }

    @Test func reachingAHostReleasesItAndWakesOnlyItsDownloads() {
        var waits = NetworkWaits()
        _ = waits.foundNoPath("cdn", now: start)
        _ = waits.foundNoPath("mirror", now: start)
        waits.reached("cdn")
        #expect(waits.held(now: start) == ["mirror"])
        #expect(waits.takeToWake() == .hosts(["cdn"]))
        #expect(waits.takeToWake() == nil)
        // A host that was not waiting wakes nothing.
        waits.reached("elsewhere")
        #expect(waits.takeToWake() == nil)
    }

    @Test func aChangeToTheNetworkMakesEveryProbeDueAndWakesEveryDownload() {
        var waits = NetworkWaits()
        for _ in 0..<5 { _ = waits.foundNoPath("cdn", now: start.addingTimeInterval(10)) }
        _ = waits.foundNoPath("mirror", now: start)
        let now = start.addingTimeInterval(11)
        waits.networkChanged(now: now)
        #expect(waits.held(now: now).isEmpty)
        waits.reached("cdn")
        #expect(waits.takeToWake() == .all)
    }
}
