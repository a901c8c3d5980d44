import Foundation
import Testing
import TestSupport

/// A path that comes back while a connection attempt is in flight is noticed at once (docs/DOWNLOADS.md, "Offline"):
/// the attempt begun on the old path is started again on the new one, never waited out. In two topologies, each with
/// an outage of 30 s and of 150 s: the namespace's only link losing its carrier (its routes stay, leading nowhere; a
/// link that resolves no neighbour, as a point-to-point one), and a second link beside a default route that leads
/// nowhere. The connect timeout is 60 s, so that an attempt is in
/// flight when the path returns, and a transfer that waited it out would take far longer than the bound. Each asserts
/// the outcome and the restart; `Benchmarks/network.sh` measures the seconds.
@Suite(.ownThreads, .enabled(if: NetworkLab.unavailable == nil, "\(NetworkLab.unavailable ?? "")"))
struct PathReturnTests {
    /// The longest a download may take after its path returns: the transfer's own few seconds and some slack. A
    /// connect waited out would take up to the 60 s connect timeout.
    static let boundAfterReturn = 25.0

    @Test(arguments: [30, 150])
    func theOnlyLinkLosingItsCarrier(outage: Int) throws {
        try outageAndReturn(
            outage: outage, setUp: { try $0.pinFirstGateway() }, down: { try $0.carrierDown() }, up: { try $0.carrierUp() })
    }

    @Test(arguments: [30, 150])
    func aSecondLinkBesideADefaultRoute(outage: Int) throws {
        try outageAndReturn(
            outage: outage, setUp: { try $0.useSecondLinkBesideADefaultRoute() }, down: { try $0.secondLinkDown() },
            up: { try $0.secondLinkUp() })
    }

    private func outageAndReturn(
        outage: Int, setUp: (NetworkLab) throws -> Void, down: (NetworkLab) throws -> Void, up: (NetworkLab) throws -> Void
    ) throws {
        let lab = try NetworkLab(rate: "4m")
        defer { lab.close() }
        try setUp(lab)
        let app = try LabApp(lab, size: 12 << 20)
        // One attempt: the outage must consume none.
        let run = try start(lab, app, ["--max-attempts", "1", "--connect-timeout", "60", "--read-timeout", "600"])
        #expect(wait(30) { app.partialBytes >= 2 << 20 }, "the download never got going")
        try down(lab)
        usleep(useconds_t(outage) * 1_000_000)
        let keptDuringOutage = app.partialBytes
        try up(lab)
        let returned = Date()
        let result = try #require(
            finish(run, within: Self.boundAfterReturn), "the download did not finish soon after its path returned")
        let afterReturn = Date().timeIntervalSince(returned)

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["level"])
        #expect(result.events("failed").isEmpty, "\(result.events("failed"))")
        // The attempt in flight when the path returned was started again, not waited out.
        let messages = result.events("paused").compactMap { ($0["error"] as? [String: Any])?["message"] as? String }
        #expect(messages.last?.contains("started again") == true, "\(messages)")
        let requests = lab.requests(for: app.path)
        #expect(requests.last?.contains("\"bytes=\(keptDuringOutage)-\"") == true, "resumed from \(keptDuringOutage): \(requests)")
        #expect(keptDuringOutage >= 2 << 20 && keptDuringOutage < 12 << 20)
        print("path returned after \(outage) s: finished \(String(format: "%.1f", afterReturn)) s later")
    }
}
