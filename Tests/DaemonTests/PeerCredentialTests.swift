import ExtensionRuntime
import Foundation
import Testing
import TestSupport

/// The socket admits only the service's own user, checked with SO_PEERCRED: a daemon run as `nobody`, reached by
/// root (whom file permissions do not stop), refuses the connection.
@Suite(.ownThreads) struct PeerCredentialTests {
    @Test(.enabled(if: getuid() == 0, "needs root to run the daemon as another user"))
    func anotherUsersConnectionIsRefused() throws {
        let folder = TestPlugins.scratch.appendingPathComponent("peer-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        chmod(folder.path, 0o777)
        let socket = folder.appendingPathComponent("run/service.sock").path
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        daemon.arguments = [
            "--reuid=65534", "--regid=65534", "--clear-groups", TestPlugins.bahost, "daemon", "--socket", socket,
            "--data-root", folder.appendingPathComponent("data").path,
        ]
        daemon.environment = ["HOME": folder.path, "PATH": "/usr/bin:/bin"]
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        defer {
            daemon.terminate()
            daemon.waitUntilExit()
        }
        #expect(ServiceDaemon.waitUntil(10) { FileManager.default.fileExists(atPath: socket) })
        var info = stat()
        #expect(stat(socket, &info) == 0 && info.st_uid == 65534 && info.st_mode & 0o777 == 0o600)

        let refused = try Bahost.run(["debug", "status", "--socket", socket])
        #expect(refused.status == 69)
        #expect(refused.stderr.contains("does not accept connections from user 0"), "\(refused.stderr)")
    }

    /// An extension reaches bahost through its runner only: one that connects to the service's socket to pose as its
    /// app (same user, so the peer check above lets it by) is refused because it runs in a window's PID namespace.
    @Test func anExtensionPosingAsAnAppIsRefused() throws {
        try #require(SandboxSupport.probe().pidNamespaces, "needs user namespaces")
        let daemon = try ServiceDaemon()
        let manifest = try TestPlugins.file(daemon.socket, name: "manifest")
        let outcome = try ExtensionWindow(pluginPath: try TestPlugins.c("misbehaving/poses_as_an_app")).run(
            [.contentRequest(.install, manifestPath: manifest, info: .unrestricted)])
        #expect(outcome.stopReason == .returned)
        let line = try #require(outcome.log.first?.message)
        #expect(line.contains("may not connect to the service") || line == "connect: Permission denied", "\(line)")
        // The app itself still gets in.
        #expect(try daemon.bahost(["debug", "status"]).status == 0)
    }
}
