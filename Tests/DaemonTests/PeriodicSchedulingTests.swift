import Foundation
import Testing
import TestSupport

/// Periodic content requests from a real daemon under its development clock and policy overrides, with the power
/// supplies read from a sysfs-shaped folder of the test's.
@Suite(.ownThreads) struct PeriodicSchedulingTests {
    let nginx = Nginx.shared

    /// A fake `/sys` with a battery at `capacity` percent, discharging, and mains offline.
    func sysfs(capacity: Int) throws -> URL {
        let root = TestPlugins.scratch.appendingPathComponent("sys-\(UUID().uuidString.prefix(8))")
        let supplies = root.appendingPathComponent("class/power_supply")
        for (name, files) in [
            ("AC", ["type": "Mains", "online": "0"]),
            ("BAT0", ["type": "Battery", "status": "Discharging", "capacity": "\(capacity)"]),
        ] {
            let folder = supplies.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (file, value) in files { try "\(value)\n".write(to: folder.appendingPathComponent(file), atomically: true, encoding: .utf8) }
        }
        return root
    }

    func installed(_ extra: [String]) throws -> (ServiceDaemon, TestApp) {
        let dir = "per-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data(#"{"assets": []}"#.utf8), at: "\(dir)/manifest.json")
        let app = try TestApp(manifestURL: nginx.https("\(dir)/manifest.json"), plugin: TestPlugins.swiftExample)
        let daemon = try ServiceDaemon(extra: extra)
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        return (daemon, app)
    }

    /// `bahost debug clock --advance SECONDS`: what the scheduler decided for the app (nil: nothing was due).
    func advance(_ daemon: ServiceDaemon, _ seconds: Double, _ app: TestApp) throws -> String? {
        let result = try daemon.report(["debug", "clock", "--advance", "\(seconds)"])
        #expect(result.status == 0)
        return (result.report["decisions"] as? [String: String])?[app.identifier]
    }

    func periodicWindows(_ daemon: ServiceDaemon) -> Int {
        daemon.logText.components(separatedBy: "returning 0 downloads for periodic").count - 1
    }

    /// A delivered download leaves the queue once its retention (`--keep-delivered-days`) has passed by the
    /// service's clock, so that a daemon that delivers for months keeps a bounded queue.
    @Test func deliveredDownloadsArePrunedAfterTheirRetention() throws {
        let dir = "prune-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data(count: 100_000), at: "\(dir)/level-1.pack")
        try nginx.serve(Data("""
            {"assets": [{"id": "level-1", "url": "\(nginx.https("\(dir)/level-1.pack"))", "size": 100000, "essential": true}]}
            """.utf8), at: "\(dir)/manifest.json")
        let app = try TestApp(manifestURL: nginx.https("\(dir)/manifest.json"), plugin: TestPlugins.swiftExample)
        let daemon = try ServiceDaemon(extra: ["--keep-delivered-days", "2"])
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        // No app runs: the extension gets the completion in a window, and the row is marked delivered.
        #expect(ServiceDaemon.waitUntil(20) { (try? daemon.downloads(app.identifier)["level-1"]?["delivered"] as? Bool) == true })

        _ = try advance(daemon, 3600, app)
        #expect(try daemon.downloads(app.identifier)["level-1"] != nil, "pruned within its retention")
        _ = try advance(daemon, 3 * 86400, app)
        #expect(ServiceDaemon.waitUntil(5) { (try? daemon.downloads(app.identifier)["level-1"]) == nil })
        #expect(daemon.logText.contains("pruned 1 delivered downloads"))
    }

    @Test func cadenceFollowsLaunchesAndSkipsWhenTheMachineOrTheAppSaySo() throws {
        let power = try sysfs(capacity: 80)
        let (daemon, app) = try installed(["--sysfs-root", power.path])
        #expect(try advance(daemon, 13 * 3600, app) == "skipped: the app has never been launched")

        #expect(try daemon.report(["launch", app.identifier]).status == 0)
        let status = try daemon.report(["debug", "status"]).report
        let row = try #require((status["apps"] as? [[String: Any]])?.first)
        #expect(row["usage"] as? String == "occasional")
        #expect((row["cadenceSeconds"] as? NSNumber)?.doubleValue == 43200)
        #expect((status["conditions"] as? [String: Any])?["batteryLow"] as? Bool == false)

        #expect(try advance(daemon, 3600, app) == nil)
        #expect(try advance(daemon, 12 * 3600, app) == "ran")
        #expect(ServiceDaemon.waitUntil(5) { periodicWindows(daemon) == 1 })

        // Battery low (the real sysfs files say so), a metered network, background refresh off: each skips.
        try "10\n".write(to: power.appendingPathComponent("class/power_supply/BAT0/capacity"), atomically: true, encoding: .utf8)
        #expect(try advance(daemon, 12 * 3600, app) == "skipped: the machine is on battery below 20%")
        try "80\n".write(to: power.appendingPathComponent("class/power_supply/BAT0/capacity"), atomically: true, encoding: .utf8)
        #expect(try daemon.report(["debug", "conditions", "--metered", "on"]).status == 0)
        #expect(try advance(daemon, 0, app) == "skipped: the network is metered")
        #expect(try daemon.report(["debug", "conditions", "--power-saver", "on"]).status == 0)
        #expect(try advance(daemon, 0, app) == "skipped: the machine is in power-saver mode")
        #expect(try daemon.report(["debug", "conditions"]).status == 0)
        #expect(try daemon.report(["debug", "background-refresh", "--app", app.identifier, "off"]).status == 0)
        #expect(try advance(daemon, 0, app) == "skipped: background refresh is off for this app")
        #expect(try daemon.report(["debug", "background-refresh", "--app", app.identifier, "on"]).status == 0)
        #expect(try advance(daemon, 0, app) == "ran")
        #expect(ServiceDaemon.waitUntil(5) { periodicWindows(daemon) == 2 })
        let last = try #require((try daemon.report(["debug", "status"]).report["apps"] as? [[String: Any]])?.first)
        #expect((last["lastDecision"] as? String)?.hasPrefix("ran at") == true)
    }

    @Test func theDailyRuntimeBudgetStopsPeriodicRequestsUntilOverriddenOrReset() throws {
        // A cadence of 0.36 s and a budget of 10 ms, which the install request's window has already spent: every
        // window counts.
        let (daemon, app) = try installed(["--periodic-interval", "0.0001", "--daily-runtime", "0.01"])
        #expect(try daemon.report(["launch", app.identifier]).status == 0)
        let spent = "skipped: today's runtime budget (0.01 s) is spent"
        #expect(try advance(daemon, 1, app) == spent)

        #expect(try daemon.report(["debug", "budget", "--app", app.identifier, "--unlimited", "on"]).status == 0)
        #expect(try advance(daemon, 1, app) == "ran")
        #expect(try daemon.report(["debug", "budget", "--app", app.identifier, "--unlimited", "off"]).status == 0)
        #expect(try advance(daemon, 1, app) == spent)

        #expect(try daemon.report(["debug", "reset-budget", "--app", app.identifier]).status == 0)
        #expect(try advance(daemon, 1, app) == "ran")
        #expect(try advance(daemon, 1, app) == spent)
    }

    @Test func developmentCommandsNeedDevelopmentMode() throws {
        let folder = TestPlugins.scratch.appendingPathComponent("prod-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let socket = folder.appendingPathComponent("s.sock").path
        let production = try Bahost.start(["daemon", "--socket", socket, "--data-root", folder.appendingPathComponent("data").path])
        defer { production.process.terminate() }
        #expect(ServiceDaemon.waitUntil(10) { FileManager.default.fileExists(atPath: socket) })
        let refused = try Bahost.run(["debug", "clock", "--advance", "10", "--socket", socket])
        #expect(refused.status == 2)
        #expect(refused.stdout.contains("--development"))
    }
}
