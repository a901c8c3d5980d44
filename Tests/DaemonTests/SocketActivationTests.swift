import Foundation
import Testing
import TestSupport

/// Socket activation as systemd does it, with `systemd-socket-activate` (from the systemd package) standing in for
/// systemd: it listens on the service's socket, and starts `bahost daemon` with it (`LISTEN_FDS`) at the first
/// connection. The daemon takes that socket instead of binding its own, and the call that started it succeeds.
@Suite(
    .ownThreads,
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-socket-activate"),
             "systemd-socket-activate is missing (the systemd package)"))
struct SocketActivationTests {
    @Test func theFirstConnectionStartsTheServiceOnThePassedSocket() throws {
        let folder = TestPlugins.scratch.appendingPathComponent("activation-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let socket = folder.appendingPathComponent("service.sock").path
        // posix_spawn, not Foundation's Process: the activator becomes the daemon (exec), and a Process so replaced
        // left Foundation's later waits for other processes hanging.
        let activator = SpawnedProcesses()
        let pid = try activator.spawn("/usr/bin/systemd-socket-activate", [
            "--listen=\(socket)",
            "--setenv=XDG_RUNTIME_DIR=\(folder.appendingPathComponent("run").path)",
            "--setenv=DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(folder.appendingPathComponent("no-bus").path)",
            "--setenv=DBUS_SESSION_BUS_ADDRESS=unix:path=\(folder.appendingPathComponent("no-bus").path)",
            TestPlugins.bahost, "daemon", "--socket", socket, "--data-root", folder.appendingPathComponent("data").path,
            "--apps-folder", folder.appendingPathComponent("apps").path,
        ], environment: [:], log: folder.appendingPathComponent("daemon.log").path)
        defer { activator.stopAll() }
        #expect(ServiceDaemon.waitUntil(10) { FileManager.default.fileExists(atPath: socket) }, "nothing listens")
        // Nothing has connected: the activator waits, and no daemon runs yet.
        let before = try String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)
        #expect(before.hasPrefix("/usr/bin/systemd-socket-activate"), "the daemon started before anything connected")

        let status = try Bahost.run(["debug", "status", "--socket", socket, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        let report = try #require(status.events().last)
        #expect(report["socketActivated"] as? Bool == true, "\(report)")
        let after = try String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)
        #expect(after.hasPrefix(TestPlugins.bahost), "the activator did not become the daemon: \(after)")
        // The socket is systemd's: the daemon's graceful stop leaves it in place for the next start.
        activator.stopAll()
        #expect(FileManager.default.fileExists(atPath: socket))
        let log = (try? String(contentsOf: folder.appendingPathComponent("daemon.log"), encoding: .utf8)) ?? ""
        #expect(log.contains("activated=true") && log.contains("stopped"), "\(log)")
    }
}
