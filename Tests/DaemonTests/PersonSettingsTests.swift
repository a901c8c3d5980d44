import Foundation
import Testing
import TestSupport

/// What the person decides (docs/DOWNLOADS.md, "What the person decides"), against a real daemon: a GameMode
/// stand-in and python3-dbusmock's UPower and power-profiles-daemon on a private bus (`SystemBusLab`), the schedule
/// with the service's development clock, the storage floor on a small tmpfs, and the settings file changed with
/// `bahost settings` and by hand. Each asserts the outcome: held with the reason shown, released once the reason
/// goes, essential and foreground downloads never held, a bad edit refused with the last good settings in force.
@Suite(.ownThreads) struct PersonSettingsTests {
    let nginx = Nginx.shared

    /// An app whose install request queues `level-1` (essential) and `level-2` (not) from nginx, on `daemon`.
    func app(sizes: (Int, Int) = (100_000, 300_000), path: String = "") throws -> TestApp {
        let dir = "person-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data.random(count: sizes.0), at: "\(dir)/level-1.pack")
        try nginx.serve(Data.random(count: sizes.1), at: "\(dir)/level-2.pack")
        try nginx.serve(Data("""
            {"assets": [
              {"id": "level-1", "url": "\(nginx.https("\(dir)/level-1.pack"))", "size": \(sizes.0), "essential": true},
              {"id": "level-2", "url": "\(nginx.https("\(dir)/level-2.pack"))", "size": \(sizes.1)}
            ]}
            """.utf8), at: "\(dir)/manifest.json")
        return try TestApp(manifestURL: nginx.https("\(dir)/manifest.json"), plugin: TestPlugins.swiftExample)
    }

    func person(_ daemon: ServiceDaemon) throws -> [String: Any] {
        try daemon.report(["debug", "status"]).report["person"] as? [String: Any] ?? [:]
    }

    func state(_ daemon: ServiceDaemon, _ identifier: String) -> [String: Any] {
        (try? daemon.downloads("com.example.levels"))?[identifier] ?? [:]
    }

    @Test(.enabled(if: SystemBusLab.unavailable == nil, "\(SystemBusLab.unavailable ?? "")"))
    func aGameHoldsBackgroundDownloadsButNeverEssentialOrForegroundOnes() throws {
        let bus = try SystemBusLab(power: true, gameMode: true)
        defer { bus.close() }
        try bus.setGameModeClients(1)
        let daemon = try ServiceDaemon(environment: bus.bothBuses)
        #expect(try ServiceDaemon.waitUntil(10) { try person(daemon)["gameModeClients"] as? Int == 1 }, "\((try? person(daemon)) ?? [:])")
        let app = try app()
        let install = try daemon.report(["install", app.folder.path])
        #expect(install.status == 0, "the essential download was held: \(install)")
        #expect(state(daemon, "level-1")["state"] as? String == "finished")
        #expect(try ServiceDaemon.waitUntil(10) {
            (state(daemon, "level-2")["heldBy"] as? String)?.contains("a game is running (GameMode reports 1 client)") == true
        }, "\(state(daemon, "level-2"))")
        #expect(try person(daemon)["held"] as? String == "a game is running (GameMode reports 1 client); game.while-playing is wait")
        let text = try daemon.bahost(["debug", "status"]).stdout
        #expect(text.contains("background downloads wait: a game is running (GameMode reports 1 client)"), "\(text)")
        #expect(text.contains("until the game ends"), "\(text)")
        #expect(try daemon.bahost(["debug", "downloads", "--app", "com.example.levels"]).stdout
            .contains("held: a game is running"))

        // What the person is waiting for goes while the game runs. The app stays connected meanwhile, as one the
        // person waits on does: a foreground download goes back to the background when its app disconnects (Apple's
        // rule), and a game holds that.
        let name = "person-fg-\(UUID().uuidString.prefix(8)).pack"
        try nginx.serve(Data.random(count: 50_000), at: name)
        let run = try LevelsApp.c.run(
            ["--delegate", "none", "--foreground", "fg=\(nginx.https(name))@50000", "--stay", "5"],
            app: "com.example.levels", daemon: daemon)
        #expect(run.events("startForeground").first?["ok"] as? Bool == true, "\(run)")
        #expect(try ServiceDaemon.waitUntil(15) { state(daemon, "fg")["state"] as? String == "finished" },
                "the foreground download was held: \(state(daemon, "fg"))")
        #expect(state(daemon, "level-2")["state"] as? String != "finished")

        try bus.setGameModeClients(0)
        #expect(try ServiceDaemon.waitUntil(15) { state(daemon, "level-2")["state"] as? String == "finished" },
                "not released when the game ended: \(state(daemon, "level-2"))")
        #expect(try person(daemon)["held"] == nil)
    }

    /// An app bahost launched that says it is playing holds the background downloads while it runs: Swift's
    /// `setPlaying` and C's `ba_app_set_playing` (Python's is in Tests/Python).
    @Test(arguments: LevelsApp.all) func anAppThatSaysItIsPlayingHoldsThemWhileItRuns(levelsApp: LevelsApp) throws {
        let daemon = try ServiceDaemon()
        let app = try app()
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        #expect(try ServiceDaemon.waitUntil(15) { state(daemon, "level-2")["state"] as? String == "finished" })
        let data = Data.random(count: 200_000)
        let name = "person-bg-\(UUID().uuidString.prefix(8)).pack"
        try nginx.serve(data, at: name)
        let game = try levelsApp.start(
            ["--playing", "--stay", "8", "--schedule", "bg=\(nginx.https(name))@200000"], app: "com.example.levels",
            daemon: daemon)
        #expect(try ServiceDaemon.waitUntil(10) {
            (state(daemon, "bg")["heldBy"] as? String)?.contains("com.example.levels says it is playing") == true
        }, "\(state(daemon, "bg"))")
        game.process.waitUntilExit()
        #expect(try ServiceDaemon.waitUntil(15) { state(daemon, "bg")["state"] as? String == "finished" },
                "not released when the game ended: \(state(daemon, "bg"))")
    }

    @Test(.enabled(if: SystemBusLab.unavailable == nil, "\(SystemBusLab.unavailable ?? "")"))
    func theBatteryAndThePowerSaverHoldThemAndASettingChangedLiveReleasesThem() throws {
        let bus = try SystemBusLab(power: true)
        defer { bus.close() }
        try bus.setBattery(onBattery: true, percent: 20)
        let daemon = try ServiceDaemon(environment: bus.bothBuses)
        #expect(try ServiceDaemon.waitUntil(10) { try person(daemon)["onBattery"] as? Bool == true }, "\((try? person(daemon)) ?? [:])")
        let app = try app()
        #expect(try daemon.report(["install", app.folder.path]).status == 0, "the essential download was held")
        #expect(try ServiceDaemon.waitUntil(10) {
            (state(daemon, "level-2")["heldBy"] as? String)?.contains("on battery at 20 %, below 30 %") == true
        }, "\(state(daemon, "level-2"))")
        // Changed live: no restart.
        let set = try daemon.bahost(["settings", "set", "power.battery-below", "10"])
        #expect(set.status == 0 && set.stdout.contains("power.battery-below = 10"), "\(set)")
        #expect(try ServiceDaemon.waitUntil(15) { state(daemon, "level-2")["state"] as? String == "finished" },
                "\(state(daemon, "level-2"))")

        try bus.setPowerProfile("power-saver")
        #expect(try ServiceDaemon.waitUntil(10) { try person(daemon)["powerSaver"] as? Bool == true })
        let name = "person-ps-\(UUID().uuidString.prefix(8)).pack"
        try nginx.serve(Data.random(count: 100_000), at: name)
        _ = try LevelsApp.c.run(["--schedule", "saver=\(nginx.https(name))@100000"], app: "com.example.levels", daemon: daemon)
        #expect(try ServiceDaemon.waitUntil(10) {
            (state(daemon, "saver")["heldBy"] as? String)?.contains("power-saver") == true
        }, "\(state(daemon, "saver"))")
        // Plugged in and out of power saver: released.
        try bus.setPowerProfile("balanced")
        try bus.setBattery(onBattery: false, percent: 20)
        #expect(try ServiceDaemon.waitUntil(15) { state(daemon, "saver")["state"] as? String == "finished" },
                "\(state(daemon, "saver"))")
    }

    @Test func theScheduleHoldsThemUntilItsHoursOpen() throws {
        let daemon = try ServiceDaemon()
        // Hours that open in two hours, by the machine's clock (the service's development clock moves forward).
        let calendar = Calendar.current
        let opens = calendar.date(byAdding: .hour, value: 2, to: Date())!
        let closes = calendar.date(byAdding: .hour, value: 3, to: Date())!
        func hhmm(_ date: Date) -> String {
            let parts = calendar.dateComponents([.hour, .minute], from: date)
            return String(format: "%02d:%02d", parts.hour!, parts.minute!)
        }
        #expect(try daemon.bahost(["settings", "set", "schedule.hours", "\(hhmm(opens))-\(hhmm(closes))"]).status == 0)
        let app = try app()
        #expect(try daemon.report(["install", app.folder.path]).status == 0, "the essential download was held")
        #expect(try ServiceDaemon.waitUntil(10) {
            (state(daemon, "level-2")["heldBy"] as? String)?.contains("outside the download hours") == true
        }, "\(state(daemon, "level-2"))")
        #expect((try person(daemon)["until"] as? String)?.hasPrefix("until ") == true)
        #expect(try daemon.bahost(["debug", "clock", "--advance", "7260"]).status == 0)
        #expect(try ServiceDaemon.waitUntil(15) { state(daemon, "level-2")["state"] as? String == "finished" },
                "not released when the hours opened: \(state(daemon, "level-2"))")
    }

    @Test func aBadEditIsRefusedAndTheLastGoodSettingsStayInForce() throws {
        let daemon = try ServiceDaemon()
        #expect(try daemon.bahost(["settings", "set", "rate.background", "1M"]).status == 0)
        #expect(try person(daemon)["backgroundRate"] as? Int == 1 << 20)
        let file = try #require(try person(daemon)["file"] as? String)
        try Data("[rate]\nbackground = \"fast\"\n".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try ServiceDaemon.waitUntil(10) {
            (try person(daemon)["refused"] as? String) == "\(file): rate.background: 'fast' is not a rate (2M, 512K, bytes a second, or off)"
        }, "\((try? person(daemon)) ?? [:])")
        #expect(try person(daemon)["backgroundRate"] as? Int == 1 << 20, "the last good settings went")
        let refused = try daemon.bahost(["settings", "set", "rate.all", "2M"])
        #expect(refused.status == 2 && refused.stdout.contains("rate.background: 'fast'"), "\(refused)")
        #expect(daemon.logText.contains("rate.background: 'fast' is not a rate"))
        // Fixed by hand: taken at once.
        try Data("[rate]\nbackground = \"3M\"\n".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try ServiceDaemon.waitUntil(10) { try person(daemon)["backgroundRate"] as? Int == 3 << 20 })
        #expect(try person(daemon)["refused"] == nil)
        // `bahost debug max-rate` is the setting rate.all now.
        #expect(try daemon.bahost(["debug", "max-rate", "2M"]).status == 0)
        let shown = try daemon.report(["settings", "show"]).report["settings"] as? [[String: Any]] ?? []
        #expect(shown.first { $0["key"] as? String == "rate.all" }?["value"] as? String == "2M", "\(shown)")
        #expect(try person(daemon)["allRate"] as? Int == 2 << 20)
    }

    @Test func withoutAServiceTheCommandEditsTheFile() throws {
        let folder = TestPlugins.scratch.appendingPathComponent("settings-\(UUID().uuidString.prefix(8))")
        let environment = ["XDG_CONFIG_HOME": folder.path, "BAHOST_SOCKET": folder.appendingPathComponent("none.sock").path]
        let set = try Bahost.run(["settings", "set", "storage.floor-size", "5G"], environment: environment)
        #expect(set.status == 0 && set.stdout.contains("no service is running"), "\(set)")
        let text = try String(contentsOfFile: folder.appendingPathComponent("bahost/settings.toml").path, encoding: .utf8)
        #expect(text.contains("[storage]\nfloor-size = \"5G\""), "\(text)")
        let bad = try Bahost.run(["settings", "set", "storage.floor-percent", "90"], environment: environment)
        #expect(bad.status != 0 && bad.stderr.contains("storage.floor-percent: '90' is not a percentage from 0 to 50"), "\(bad)")
    }

    /// On a small volume (a 64 MiB tmpfs) with a floor of half of it: the essential download fails naming the space
    /// and the volume, the other waits for space.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root (CI runs the tests as root)"))
    func theStorageFloorFailsEssentialDownloadsAndHoldsTheOthers() throws {
        let volume = try SmallVolume(megabytes: 64)
        defer { volume.unmount() }
        let daemon = try ServiceDaemon(dataRoot: volume.url.appendingPathComponent("data"))
        defer { daemon.stop(SIGTERM) }
        #expect(try daemon.bahost(["settings", "set", "storage.floor-percent", "50"]).status == 0)
        let app = try app(sizes: (40 << 20, 40 << 20))
        let install = try daemon.report(["install", app.folder.path])
        #expect(install.status != 0)
        let essential = state(daemon, "level-1")
        #expect(essential["state"] as? String == "failed", "\(essential)")
        let reason = (essential["error"] as? [String: Any])?["message"] as? String ?? "\(essential)"
        #expect(reason.contains("not enough free space on the volume of") && reason.contains("storage floor of"), "\(reason)")
        #expect(try ServiceDaemon.waitUntil(10) {
            let other = state(daemon, "level-2")
            return other["state"] as? String == "waitingToRetry"
                && ((other["error"] as? [String: Any])?["message"] as? String)?.contains("storage floor") == true
        }, "\(state(daemon, "level-2"))")
    }
}
