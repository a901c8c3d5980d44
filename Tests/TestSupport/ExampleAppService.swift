import Foundation

/// A daemon with the Swift example app installed, its manifest on nginx: one essential and one other asset.
public struct ExampleAppService {
    public let daemon: ServiceDaemon
    public let app: TestApp
    /// The folder on nginx that this service's files are served from.
    public let dir: String

    /// Installs the app and waits for its essential download; `extra` adds daemon options.
    public init(extra: [String] = []) throws {
        let nginx = Nginx.shared
        dir = "svc-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data.random(count: 300_000), at: "\(dir)/level-1.pack")
        try nginx.serve(Data.random(count: 200_000), at: "\(dir)/level-2.pack")
        try nginx.serve(Data("""
            {"assets": [
              {"id": "level-1", "url": "\(nginx.https("\(dir)/level-1.pack"))", "size": 300000, "essential": true},
              {"id": "level-2", "url": "\(nginx.https("\(dir)/level-2.pack"))", "size": 200000}
            ]}
            """.utf8), at: "\(dir)/manifest.json")
        app = try TestApp(manifestURL: nginx.https("\(dir)/manifest.json"), plugin: TestPlugins.swiftExample)
        daemon = try ServiceDaemon(extra: extra)
        let install = try daemon.report(["install", app.folder.path])
        guard install.status == 0, install.report["success"] as? Bool == true,
            install.events.contains(where: { $0["event"] as? String == "finished" && $0["identifier"] as? String == "level-1" })
        else { throw ServiceDaemon.DaemonError.exited("the install failed: \(install)") }
    }

    /// Serves `count` random bytes as `NAME.pack` in this service's folder; returns them and their URL.
    public func serve(_ name: String, _ count: Int) throws -> (data: Data, url: String) {
        let data = Data.random(count: count)
        try Nginx.shared.serve(data, at: "\(dir)/\(name).pack")
        return (data, Nginx.shared.https("\(dir)/\(name).pack"))
    }
}
