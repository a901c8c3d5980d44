import ExtensionRuntime
import Foundation
import Testing
import TestSupport
import Vocabulary

/// The window's sandbox: each restriction tried by a real extension that tries to break it (Plugins/C/misbehaving),
/// with what the extension saw and what the window's report says.
@Suite(.ownThreads) struct SandboxTests {
    let support = SandboxSupport.probe()

    /// A data root with the extension's container and another app's, which holds a secret; outside the scratch
    /// folder, which holds the test extensions and is readable to them as their own folder.
    func containers() throws -> (own: URL, other: URL) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("bahost-sandbox-\(UUID().uuidString)/containers")
        let own = root.appendingPathComponent("group.com.example.levels")
        let other = root.appendingPathComponent("group.com.example.other")
        for folder in [own, other] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        try Data("the other app's".utf8).write(to: other.appendingPathComponent("secret"))
        return (own, other)
    }

    func window(
        _ plugin: String, manifest: String = "", container: URL? = nil, sandboxed: Bool = true,
        limits: WindowLimits = .default
    ) throws -> WindowOutcome {
        let manifestPath = try TestPlugins.file(manifest, name: "manifest")
        let appGroup = container.map { ExtensionWindow.AppGroup(identifier: "group.com.example.levels", container: $0.path) }
        return try ExtensionWindow(pluginPath: plugin, limits: limits, appGroup: appGroup, sandboxed: sandboxed).run(
            [.contentRequest(.install, manifestPath: manifestPath, info: .unrestricted)])
    }

    @Test func nothingAnExtensionStartsOutlivesItsWindow() throws {
        try #require(support.pidNamespaces, "this machine allows no user namespaces: \(support.missing)")
        let outcome = try window(try TestPlugins.c("misbehaving/escapes_the_window"))
        #expect(outcome.stopReason == .returned)
        #expect(outcome.log.map(\.message) == ["three escapees started"])
        #expect(outcome.sandbox?.contains("processes: a PID namespace") == true, "\(outcome.sandbox ?? "no report")")
        // setsid, a double fork, a stopped process and an exec'd program: all gone with the window.
        #expect(waitUntilGone(["ba-escapee-sid", "ba-escapee-stop", "sleep 4711.25"]),
                "\(processes(named: ["ba-escapee", "4711.25"]))")
        #expect(try hostStillWorks())
    }

    @Test func filesOutsideItsContainerAreRefused() throws {
        try #require(support.landlockABI != nil, "this kernel has no Landlock")
        let (own, other) = try containers()
        let home = FileManager.default.homeDirectoryForCurrentUser.path
        try? FileManager.default.removeItem(atPath: home + "/.bahost-escape")
        try? FileManager.default.removeItem(atPath: "/tmp/bahost-escape")
        let outcome = try window(try TestPlugins.c("misbehaving/reaches_outside_its_container"), container: own)
        #expect(outcome.stopReason == .returned)
        let denied = "Permission denied"
        #expect(outcome.log.map(\.message) == [
            "write \(home)/.bahost-escape: \(denied)", "list \(home): \(denied)", "write /tmp/bahost-escape: \(denied)",
            "read \(own.path)/../group.com.example.other/secret: \(denied)",
            "write \(own.path)/../group.com.example.other/planted: \(denied)", "write \(own.path)/../../planted: \(denied)",
            "write \(own.path)/kept: done",
        ])
        for path in [home + "/.bahost-escape", "/tmp/bahost-escape", other.appendingPathComponent("planted").path,
                     own.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("planted").path] {
            #expect(!FileManager.default.fileExists(atPath: path), "\(path)")
        }
        #expect(FileManager.default.fileExists(atPath: own.appendingPathComponent("kept").path))
        #expect(outcome.sandbox?.contains("files (Landlock ABI") == true, "\(outcome.sandbox ?? "no report")")
        #expect(outcome.sandbox?.contains("write its app group's container only") == true)
    }

    @Test func processesOutsideItsWindowCannotBeSignalled() throws {
        let victim = Process()
        victim.executableURL = URL(fileURLWithPath: "/bin/sleep")
        victim.arguments = ["30"]
        try victim.run()
        defer { victim.terminate() }
        let outcome = try window(try TestPlugins.c("misbehaving/signals_outside"), manifest: "\(victim.processIdentifier)")
        #expect(outcome.stopReason == .returned)
        let line = try #require(outcome.log.first?.message)
        // Outside its PID namespace the pid names no process it can see; Landlock's scope refuses it besides.
        #expect(line == "kill \(victim.processIdentifier): No such process"
                || line == "kill \(victim.processIdentifier): Operation not permitted", "\(line)")
        Thread.sleep(forTimeInterval: 0.1)
        #expect(victim.isRunning)
    }

    /// Linux exempts root from the process limit: as root, the window runs under `bahost run` as `nobody`.
    @Test func descriptorsAndProcessesStopAtTheWindowsLimits() throws {
        try #require(support.pidNamespaces, "the process limit needs the window's own user namespace")
        let plugin = try TestPlugins.c("misbehaving/exhausts_processes_and_descriptors")
        let lines: [String], sandbox: String?
        if getuid() == 0 {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bahost-nobody-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            chmod(folder.path, 0o755)
            let copy = folder.appendingPathComponent("extension.so").path, manifest = folder.appendingPathComponent("manifest").path
            try FileManager.default.copyItem(atPath: plugin, toPath: copy)
            _ = FileManager.default.createFile(atPath: manifest, contents: Data())
            for file in [copy, manifest] { chmod(file, 0o644) }
            let run = try Bahost.run(
                ["--reuid=65534", "--regid=65534", "--clear-groups", TestPlugins.bahost, "run", "--plugin", copy,
                 "--event", "install", "--manifest", manifest, "--window-only", "--json"],
                environment: ["HOME": folder.path], executable: "/usr/bin/setpriv")
            let report = try run.json()
            lines = (report["log"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
            sandbox = report["sandbox"] as? String
        } else {
            let outcome = try window(plugin)
            #expect(outcome.stopReason == .returned)
            lines = outcome.log.map(\.message)
            sandbox = outcome.sandbox
        }
        try #require(lines.count == 2, "\(lines)")
        let descriptors = try #require(Int(lines[0].split(separator: " ")[1].dropLast()))
        #expect(descriptors > 200 && descriptors < 256 && lines[0].hasSuffix("then Too many open files"), "\(lines[0])")
        let processes = try #require(Int(lines[1].split(separator: " ")[1].dropLast()))
        #expect(processes > 0 && processes < 64 && lines[1].hasSuffix("then Resource temporarily unavailable"), "\(lines[1])")
        #expect(sandbox?.contains("limits: 256 open files, 64 processes") == true, "\(sandbox ?? "no report")")
        #expect(try hostStillWorks())
    }

    @Test func abstractSocketsOutsideItsWindowAreUnreachable() throws {
        try #require((support.landlockABI ?? 0) >= 6, "abstract sockets are scoped from Landlock ABI 6")
        let name = "bahost-test-\(UUID().uuidString.prefix(8))"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            for (index, byte) in name.utf8.enumerated() { path[index + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + name.utf8.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
        }
        try #require(bound == 0 && listen(listener, 1) == 0)
        let outcome = try window(try TestPlugins.c("misbehaving/reaches_abstract_socket"), manifest: name)
        #expect(outcome.stopReason == .returned)
        #expect(outcome.log.map(\.message) == ["connect @\(name): Operation not permitted"])
        #expect(outcome.sandbox?.contains("signals and abstract sockets: this window only") == true)
    }

    @Test func theSandboxOffSaysSoLoudly() throws {
        let outcome = try window(try TestPlugins.c("example_extension"), manifest: exampleManifest, sandboxed: false)
        #expect(outcome.stopReason == .returned)
        #expect(outcome.sandbox?.hasPrefix("OFF (--sandbox off)") == true, "\(outcome.sandbox ?? "no report")")
    }

    @Test func aSwiftExtensionLoadsItsRuntimeInsideTheSandbox() throws {
        let outcome = try window(TestPlugins.swiftExample, manifest: #"{"assets": []}"#)
        #expect(outcome.stopReason == .returned, "\(outcome.log.map(\.message))")
        #expect(outcome.sandbox?.contains("could not allow") == false, "\(outcome.sandbox ?? "")")
    }

    /// The network stays open inside the sandbox, as Apple leaves it (docs/SANDBOX.md, "The network stays open").
    @Test func theNetworkStaysOpen() throws {
        try #require(support.landlockABI != nil, "this machine has no Landlock: \(support.missing)")
        let outcome = try window(try TestPlugins.c("probes/reaches_the_network"), manifest: "\(Nginx.shared.httpPort)")
        #expect(outcome.stopReason == .returned)
        #expect(outcome.log.map(\.message).first?.hasPrefix("reply: HTTP/1.1 ") == true, "\(outcome.log)")
    }

    /// The memory limit holds for the window as a whole: four children that take 48 MiB each end the window killed
    /// for memory, with the whole window's peak, though the extension's own process stays small. In this process
    /// with the window's cgroup where the machine offers one; through `bahost run` with cgroups off, by the host
    /// summing the processes of the window's PID namespace.
    @Test func theMemoryLimitCoversTheWindowsChildren() throws {
        try #require(support.pidNamespaces, "the window's processes are found in its PID namespace")
        let plugin = try TestPlugins.c("misbehaving/children_take_memory")
        let limit: Int64 = 128 << 20
        let outcome = try window(plugin, limits: WindowLimits(budget: .seconds(20), grace: .seconds(1), memoryBytes: limit))
        #expect(outcome.stopReason == .killedForMemory(limitBytes: limit), "\(outcome.log.map(\.message))")
        #expect(outcome.peakResidentBytes > limit)
        #expect(outcome.elapsed < .seconds(8))
        #expect(waitUntilGone(["ba-memory-child"]))

        let manifest = try TestPlugins.file("", name: "manifest")
        let run = try Bahost.run(
            ["run", "--plugin", plugin, "--event", "install", "--manifest", manifest, "--window-only", "--json",
             "--memory-limit", "128", "--budget", "20"],
            environment: ["BAHOST_CGROUPS": "off"])
        let report = try run.json()
        let stop = report["stopReason"] as? [String: Any]
        #expect(stop?["kind"] as? String == "killed-for-memory", "\(run.stdout)")
        #expect((report["peakResidentBytes"] as? Int64 ?? 0) > limit)
        #expect((report["elapsedSeconds"] as? Double ?? 99) < 8)
        #expect((report["sandbox"] as? String)?.contains("no cgroup") == true, "\(report["sandbox"] ?? "")")
        #expect(waitUntilGone(["ba-memory-child"]))
    }

    /// As root, Linux exempts the window from RLIMIT_NPROC; the window's cgroup limits its processes all the same.
    @Test func theProcessLimitHoldsForRootInTheWindowsCgroup() throws {
        try #require(support.windowCgroups, "this machine gives windows no cgroup: \(support.containment)")
        let outcome = try window(try TestPlugins.c("misbehaving/exhausts_processes_and_descriptors"))
        #expect(outcome.stopReason == .returned)
        let lines = outcome.log.map(\.message)
        try #require(lines.count == 2, "\(lines)")
        let processes = try #require(Int(lines[1].split(separator: " ")[1].dropLast()))
        #expect(processes > 0 && processes < 64 && lines[1].hasSuffix("then Resource temporarily unavailable"), "\(lines[1])")
        #expect(outcome.sandbox?.contains("the whole window (cgroup): 64 tasks") == true, "\(outcome.sandbox ?? "")")
    }

    /// Of /etc a window reads only what loading, TLS and name resolution need: as root (how CI and containers run
    /// it), whose own reads of /etc/shadow succeed, the window's are refused by the sandbox, not by the file's mode.
    @Test func rootOnlyFilesStayClosedToAWindowRunAsRoot() throws {
        try #require(support.landlockABI != nil, "this kernel has no Landlock")
        if getuid() == 0 { #expect(FileManager.default.isReadableFile(atPath: "/etc/shadow")) }
        let outcome = try window(try TestPlugins.c("misbehaving/reads_secrets"))
        #expect(outcome.stopReason == .returned)
        let denied = "Permission denied"
        #expect(outcome.log.map(\.message) == [
            "read /etc/shadow: \(denied)", "read /etc/gshadow: \(denied)", "list /etc: \(denied)", "list /root: \(denied)",
            "read /etc/ssl/certs/ca-certificates.crt: ok", "read /etc/resolv.conf: ok", "read /etc/passwd: ok",
        ])
    }

    /// A window's /proc is its own: it cannot read the environment of the user's other processes (this test process
    /// runs as the same user), and it sees only its own processes.
    @Test func otherProcessesOfTheUserAreInvisible() throws {
        try #require(support.pidNamespaces, "a private /proc needs the window's own namespaces")
        let outcome = try window(try TestPlugins.c("misbehaving/reads_other_processes"), manifest: "\(getpid())")
        #expect(outcome.stopReason == .returned)
        #expect(outcome.log.map(\.message) == ["environ \(getpid()): No such file or directory", "processes visible: 1"])
        #expect(outcome.sandbox?.contains("/proc: the window's own processes only") == true, "\(outcome.sandbox ?? "")")
    }
}
