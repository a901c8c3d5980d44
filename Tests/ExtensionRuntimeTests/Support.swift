import ExtensionRuntime
import Foundation
import Policy
import TestSupport
import Vocabulary

/// Runs one content request against `plugin` with a fresh manifest file.
func runContentRequest(
    _ plugin: String, _ request: ContentRequest = .install, manifest: String = "", limits: WindowLimits = .default,
    services: ExtensionHostServices? = nil
) throws -> WindowOutcome {
    let manifestPath = try TestPlugins.file(manifest, name: "manifest")
    return try ExtensionWindow(pluginPath: plugin, limits: limits).run(
        [.contentRequest(request, manifestPath: manifestPath, info: .unrestricted)], services: services)
}

/// After a misbehaving extension, the same host must still run a good one: the proof that it carried on.
func hostStillWorks() throws -> Bool {
    let outcome = try runContentRequest(try TestPlugins.c("example_extension"), manifest: exampleManifest)
    return outcome.stopReason == .returned && outcome.returnedDownloads.count == 2
}

let exampleManifest = """
    level-1 1048576 essential https://assets.example.com/levels/level-1.pack
    level-2 4194304 optional https://assets.example.com/levels/level-2.pack
    """

let shortLimits = WindowLimits(budget: .seconds(1), grace: .milliseconds(500), memoryBytes: 128 << 20)

func inMemoryServices() -> InMemoryHostServices {
    let lock = TestPlugins.scratch.appendingPathComponent("\(UUID().uuidString).lock").path
    let rules = DownloadRules(appGroupIdentifier: nil, allowInsecureLoopback: false)
    return InMemoryHostServices(lockPath: lock) { DownloadValidation.check($0, for: nil, rules: rules) }
}

func isAlive(_ pid: pid_t) -> Bool { kill(pid, 0) == 0 }

/// The processes of this machine whose name (comm) or command line holds one of `markers`: a window's process
/// knows its pid only inside its own namespace, so tests find what it left by name.
func processes(named markers: [String]) -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.filter { Int($0) != nil }.compactMap { pid -> String? in
        let comm = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
        let commandLine = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")))
            .map { String(decoding: $0.map { $0 == 0 ? 32 : $0 }, as: UTF8.self) } ?? ""
        return markers.contains { comm.contains($0) || commandLine.contains($0) } ? "\(pid) \(comm)" : nil
    }
}

/// True once no process named by `markers` is left (the kernel reaps a namespace's processes right after its end).
func waitUntilGone(_ markers: [String], within limit: Duration = .seconds(5)) -> Bool {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if processes(named: markers).isEmpty { return true }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return processes(named: markers).isEmpty
}
