import Foundation
import ServiceWire
import Testing
import TestSupport

/// A client that stops reading its connection (hung, or hostile) costs the service nothing but that connection:
/// the events and replies meant for it wait up to a bound, then the service closes it, and every other client and
/// download goes on.
@Suite(.ownThreads) struct UnreadClientTests {
    let nginx = Nginx.shared

    /// A connection follows an install of 600 downloads (its progress lines) and never reads: the kernel's buffer
    /// fills, then the 64 KiB the daemon keeps for it. Before, the turn that sent a line to it waited there for good,
    /// and no download was recorded again.
    @Test func aFollowerThatNeverReadsIsClosedAndTheDownloadsGoOn() throws {
        let dir = "unread-\(UUID().uuidString.prefix(8))"
        let count = 600
        var assets: [String] = []
        for index in 0..<count {
            try nginx.serve(Data.random(count: 2_000), at: "\(dir)/\(index).pack")
            assets.append(#"{"id": "a\#(index)", "url": "\#(nginx.https("\(dir)/\(index).pack"))", "size": 2000}"#)
        }
        try nginx.serve(Data(#"{"assets": [\#(assets.joined(separator: ","))]}"#.utf8), at: "\(dir)/manifest.json")
        let app = try TestApp(manifestURL: nginx.https("\(dir)/manifest.json"), plugin: TestPlugins.swiftExample)
        let daemon = try ServiceDaemon(extra: ["--max-unread-bytes", "65536"])

        let follower = try FramedSocket.connect(to: daemon.socket)
        defer { follower.close() }
        let hello = Hello(role: .control, appIdentifier: nil)
        try follower.send(try ServiceProtocol.encode(ClientMessage.request(id: 1, .hello(hello))))
        _ = try #require(try follower.receive())
        try follower.send(try ServiceProtocol.encode(
            ClientMessage.request(id: 2, .control(.install(appDirectory: app.folder.path)))))
        // From here on the follower reads nothing.

        #expect(try ServiceDaemon.waitUntil(90) {
            let rows = try daemon.downloads(app.identifier)
            return rows.count == count && rows.values.allSatisfy { $0["state"] as? String == "finished" }
        }, "\(daemon.logText.suffix(2000))")
        #expect(ServiceDaemon.waitUntil(10) {
            daemon.logText.contains("closed a connection that does not read what the service sends")
                && daemon.logText.contains("limit of 65536 bytes unread")
        }, "\(daemon.logText.suffix(2000))")
        // Every other client is served as before.
        #expect(try daemon.bahost(["debug", "status"]).status == 0)
    }
}
