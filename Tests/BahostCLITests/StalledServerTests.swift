import Foundation
import Testing
import TestSupport

/// A server that stalls is the server's failure, not a missing network (docs/DOWNLOADS.md, "Offline"): an
/// established TCP connection proves the path. Against a listener of the test's own on loopback that accepts
/// connections, never answers a TLS ClientHello, and never sends a response head for one path.
@Suite(.ownThreads) struct StalledServerTests {
    @Test func aStalledServerUsesTheAttemptsAndHoldsNoOtherDownloadOfItsHost() throws {
        let server = try SilentServer()
        defer { server.stop() }
        let body = Data.random(count: 40_000)
        server.serve(body, at: "/ok.pack")
        server.stall(at: "/nohead.pack")
        // Two https URLs on the plain-HTTP port (their handshakes are never answered), one path never answered, and
        // one that is served, all on the same host and port.
        let manifest = """
            tls 1000 optional \(server.url("/tls.pack", scheme: "https"))
            tls2 1000 optional \(server.url("/tls2.pack", scheme: "https"))
            nohead 1000 optional \(server.url("/nohead.pack"))
            ok \(body.count) optional \(server.url("/ok.pack"))

            """
        server.serve(Data(manifest.utf8), at: "/manifest.txt")
        let app = try LifecycleTests.App(manifestURL: server.url("/manifest.txt"), allowList: ["127.0.0.1"])

        let run = try Bahost.start([
            "run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install", "--info-plist",
            app.infoPlist, "--data-root", app.dataRoot.path, "--json", "--allow-insecure-loopback",
            "--max-attempts", "2", "--connect-timeout", "1", "--read-timeout", "1", "--retry-delay", "0.05",
        ])
        // Before the rule, the stalled handshakes waited for the network for ever and the run never ended.
        let result = try #require(Bahost.finish(run, within: 90), "the stalled downloads never failed")

        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["ok"])
        #expect(FileManager.default.contents(atPath: app.container.appendingPathComponent("Assets/ok").path) == body)
        var failed: [String: Int] = [:]
        for event in result.events("failed") {
            failed[event["identifier"] as? String ?? ""] = (event["error"] as? [String: Any])?["code"] as? Int
        }
        #expect(failed == ["tls": -1001, "tls2": -1001, "nohead": -1001], "\(result.events("failed"))")
        // Each used its attempts, waiting to retry between them; none waited for the network.
        let paused = result.events("paused")
        #expect(paused.allSatisfy { $0["reason"] as? String == "waitingToRetry" }, "\(paused)")
        #expect(Set(paused.compactMap { $0["identifier"] as? String }) == ["tls", "tls2", "nohead"], "\(paused)")
        #expect(server.tlsHellos == 4, "two attempts each: \(server.tlsHellos)")
        #expect(server.requests(for: "/nohead.pack") == 2)
        #expect(server.requests(for: "/ok.pack") == 1)
        let messages = result.events("failed").compactMap { ($0["error"] as? [String: Any])?["message"] as? String }
        #expect(messages.filter { $0.contains("TLS handshake") }.count == 2, "\(messages)")
    }
}
