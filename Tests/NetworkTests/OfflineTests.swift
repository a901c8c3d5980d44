import Foundation
import Testing
import TestSupport

/// Offline is a state, not a failure (docs/DOWNLOADS.md, "Offline"): `bahost run` in a client namespace downloads
/// from nginx in a server namespace while the tests take the link down and up, or move the route. Each asserts what
/// happened to the download, never how long it took (the benchmark measures that).
@Suite(.ownThreads, .serialized, .enabled(if: NetworkLab.unavailable == nil, "\(NetworkLab.unavailable ?? "")"))
struct OfflineTests {
    /// The link goes down in the middle of a download and stays down through more failed tries than the download
    /// has attempts; when it comes back the download resumes from the bytes it kept and finishes. No attempt was
    /// consumed by the outage, and the transfer on the dead link was dropped when the link went, not after the read
    /// timeout.
    @Test func anOutageConsumesNoAttemptAndTheDownloadResumesWhenTheLinkReturns() throws {
        let lab = try NetworkLab(rate: "1m")
        defer { lab.close() }
        let app = try LabApp(lab, size: 6 << 20)
        let run = try start(lab, app, ["--max-attempts", "2", "--read-timeout", "600", "--retry-delay", "0.05"])
        #expect(wait(30) { app.partialBytes >= 1 << 20 }, "the download never got going")
        try lab.linkDown()
        // Long enough for the probes to fail several times (at 0.25, 1, 2 and 4 s), each once an attempt before.
        usleep(8_000_000)
        let keptDuringOutage = app.partialBytes
        try lab.linkUp()
        let result = try #require(finish(run, within: 60), "the download did not finish after the link returned")

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["level"])
        #expect(result.events("failed").isEmpty, "\(result.events("failed"))")
        let waits = result.events("paused").filter { $0["reason"] as? String == "waitingForNetwork" }
        #expect(waits.count > 2, "the outage was tried \(waits.count) times: fewer than the attempts it should not use")
        let requests = lab.requests(for: app.path)
        #expect(requests.count == 2, "\(requests)")
        #expect(requests.last?.contains("\"bytes=\(keptDuringOutage)-\"") == true, "resumed from \(keptDuringOutage): \(requests)")
        #expect(keptDuringOutage >= 1 << 20 && keptDuringOutage < 6 << 20)
    }

    /// The route to the server moves to another link and the first goes down (Wi-Fi to Ethernet): the transfer on
    /// the old path is dropped at once and resumes on the new one, from the new address, with a read timeout
    /// (600 s) it would otherwise have waited out, and one attempt in all.
    @Test func aRouteChangeMovesTheTransferToTheNewPathAtOnce() throws {
        let lab = try NetworkLab(rate: "1m")
        defer { lab.close() }
        let app = try LabApp(lab, size: 5 << 20)
        let run = try start(lab, app, ["--max-attempts", "1", "--read-timeout", "600"])
        #expect(wait(30) { app.partialBytes >= 1 << 20 }, "the download never got going")
        try lab.switchRoute()
        let result = try #require(finish(run, within: 60), "the transfer waited on the old path")

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["level"])
        let requests = lab.requests(for: app.path)
        #expect(requests.count == 2, "\(requests)")
        #expect(requests.first?.hasPrefix("10.77.1.2 ") == true, "\(requests)")
        #expect(requests.last?.hasPrefix("10.77.2.2 ") == true && requests.last?.contains("\"bytes=") == true, "\(requests)")
    }
}
