import Foundation
import Testing
import TestSupport

/// What a person sees while `bahost launch` waits, on a real desktop: Xvfb, a session bus of the test's own, dunst as
/// the notification server, `dbus-monitor` writing down what the service sent (`DesktopLab`). The service shows a
/// notification with the progress and the app's name from its `.desktop` entry, updated in place, and the same on the
/// app's icon (the launcher entry's `Update`); closes it when the app starts; and tells of an essential download
/// that failed with a "Try again" that, invoked through dunst, schedules it again.
@Suite(.ownThreads, .serialized, .enabled(if: DesktopLab.unavailable == nil, "\(DesktopLab.unavailable ?? "")"))
struct DesktopProgressTests {
    let nginx = Nginx.shared

    @Test func aLaunchShowsItsProgressAndAFailureCanBeTriedAgain() throws {
        let lab = try DesktopLab()
        defer { lab.close() }
        let dir = "desktop-\(UUID().uuidString.prefix(8))"
        // 3 MB at /slow/'s 1 MiB/s: a few seconds of progress to see; "extras" is not there yet (404).
        try nginx.serve(Data(count: 3_000_000), at: "slow/\(dir)/levels.pack")
        try nginx.serve(Data("""
            {"assets": [
              {"id": "levels", "url": "\(nginx.https("slow/\(dir)/levels.pack"))", "size": 3000000, "essential": true},
              {"id": "extras", "url": "\(nginx.https("\(dir)/extras.pack"))", "size": 1000, "essential": true}
            ]}
            """.utf8), at: "\(dir)/manifest.json")
        let app = try TestApp(manifestURL: nginx.https("\(dir)/manifest.json"), plugin: TestPlugins.swiftExample)
        try lab.writeDesktopEntry(app.identifier, name: "Levels of Test", icon: "applications-games")
        let daemon = try ServiceDaemon(environment: lab.environment)

        // The install (which waits too) runs on; the person clicks the app meanwhile.
        let install = try Bahost.start(["install", app.folder.path, "--socket", daemon.socket])
        defer { _ = Bahost.finish(install) }
        #expect(ServiceDaemon.waitUntil(10) {
            (try? daemon.report(["debug", "status"]).report["apps"] as? [[String: Any]])?.isEmpty == false
        })
        let launch = try Bahost.start(["launch", app.identifier, "--socket", daemon.socket])
        #expect(ServiceDaemon.waitUntil(20) { lab.monitored.contains("Downloading required content") },
                "no notification: \(lab.monitored.suffix(2000)) \(daemon.logText.suffix(2000))")
        let output = TestPlugins.scratch.appendingPathComponent("desktop-output")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        let screenshot = output.appendingPathComponent("launch-progress.png").path
        usleep(500_000)
        try lab.screenshot(to: screenshot)
        print("screenshot of the progress notification: \(screenshot)")
        let launched = Bahost.finish(launch)
        #expect(launched.status == 2, "extras failed, so launch without a command exits 2: \(launched.stdout)")

        let seen = lab.monitored
        // The waiting notice: the app's name and icon from its entry, the progress as the `value` hint, updated in
        // place (a later Notify replaces the first's id), then closed.
        let notifies = Self.calls("Notify", in: seen)
        let waiting = notifies.filter { $0.contains("\"Downloading required content\"") }
        #expect(!waiting.isEmpty)
        #expect(waiting.allSatisfy { $0.contains("\"Levels of Test\"") && $0.contains("\"applications-games\"") })
        let values = waiting.compactMap { Self.firstInt(after: "string \"value\"", in: $0) }
        #expect(!values.isEmpty && values.allSatisfy { (0...100).contains($0) }, "\(values)")
        #expect(values == values.sorted(), "the progress went back: \(values)")
        #expect(waiting.dropFirst().allSatisfy { !$0.contains("uint32 0\n") }, "an update did not replace the notice")
        #expect(seen.contains("member=CloseNotification"), "the notice was not closed when the app started")
        // The dock: the app's launcher entry with its progress, hidden again at the end.
        let updates = Self.calls("Update", in: seen)
        #expect(updates.contains { $0.contains("\"application://\(app.identifier).desktop\"") })
        #expect(updates.first?.contains("boolean true") == true, "\(updates.first ?? "")")
        #expect(updates.last.map { !$0.contains("boolean true") } == true, "\(updates.last ?? "")")

        // The failure, which asset and why, with a "Try again" that schedules it again, now that the file is there.
        let failure = try #require(notifies.first { $0.contains("could not download extras") }, "\(notifies)")
        #expect(failure.contains("refused") || failure.contains("404"), "\(failure)")
        #expect(failure.contains("\"Try again\""), "\(failure)")
        try nginx.serve(Data(count: 1000), at: "\(dir)/extras.pack")
        #expect(ServiceDaemon.waitUntil(5) { (try? lab.dunstctl(["count", "displayed"]))?.hasPrefix("1") == true })
        try lab.dunstctl(["action", "0"])
        #expect(ServiceDaemon.waitUntil(20) { lab.monitored.contains("member=ActionInvoked") }, "\(lab.monitored.suffix(1000))")
        #expect(ServiceDaemon.waitUntil(30) {
            let row = (try? daemon.downloads(app.identifier))?["extras"]
            return row?["state"] as? String == "finished" && row?["essential"] as? Bool == false
        }, "extras did not run again: \(daemon.logText.suffix(2000))")

        let png = try Data(contentsOf: URL(fileURLWithPath: screenshot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 2000)
    }

    /// An app that opted in (`BAHostShowsDownloadProgress`) has the progress of what it starts in the foreground
    /// shown as a launch's is, closed when it is done; one that did not, nothing.
    @Test func foregroundDownloadsAreShownForAnAppThatOptsIn() throws {
        let lab = try DesktopLab()
        defer { lab.close() }
        let dir = "fg-desktop-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data(count: 2_500_000), at: "slow/\(dir)/movie.pack")
        try nginx.serve(Data(#"{"assets": []}"#.utf8), at: "\(dir)/manifest.json")
        let movie = "movie=\(nginx.https("slow/\(dir)/movie.pack"))@2500000"
        try lab.writeDesktopEntry("com.example.levels", name: "Levels of Test", icon: "applications-games")
        // Returns the daemon, which a test keeps running while it looks at what the service shows.
        func foregroundDownload(optingIn: Bool) throws -> ServiceDaemon {
            let app = try TestApp(
                manifestURL: nginx.https("\(dir)/manifest.json"), plugin: TestPlugins.swiftExample,
                otherKeys: optingIn ? ["BAHostShowsDownloadProgress": true] : [:])
            let daemon = try ServiceDaemon(environment: lab.environment)
            #expect(try daemon.report(["install", app.folder.path]).status == 0)
            let run = try LevelsApp.swift.run(
                ["--delegate", "full", "--foreground", movie, "--wait-for", "1", "--timeout", "30"],
                app: app.identifier, daemon: daemon)
            #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
            return daemon
        }
        let quiet = try foregroundDownload(optingIn: false)
        usleep(1_000_000)
        #expect(!lab.monitored.contains("member=Notify"), "an app that did not opt in was shown")
        _ = quiet.stop(SIGTERM)
        let shown = try foregroundDownload(optingIn: true)
        #expect(ServiceDaemon.waitUntil(5) { lab.monitored.contains("member=CloseNotification") })
        _ = shown.stop(SIGTERM)
        let notices = Self.calls("Notify", in: lab.monitored)
        #expect(notices.contains { $0.contains("\"Downloading\"") && $0.contains("\"Levels of Test\"") }, "\(notices)")
        #expect(notices.contains { $0.contains("string \"value\"") }, "\(notices)")
    }

    /// Without a session bus the launch is what it was: nothing shown, nothing failed.
    @Test func withoutASessionBusALaunchOnlyTellsTheTerminal() throws {
        let dir = "nodesktop-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data(count: 1000), at: "\(dir)/levels.pack")
        try nginx.serve(Data("""
            {"assets": [{"id": "levels", "url": "\(nginx.https("\(dir)/levels.pack"))", "size": 1000, "essential": true}]}
            """.utf8), at: "\(dir)/manifest.json")
        let app = try TestApp(manifestURL: nginx.https("\(dir)/manifest.json"), plugin: TestPlugins.swiftExample)
        let daemon = try ServiceDaemon()
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        let launch = try daemon.bahost(["launch", app.identifier])
        #expect(launch.status == 0, "\(launch.stderr)")
    }

    /// The method calls or signals named `member` in dbus-monitor's output, each with its arguments.
    static func calls(_ member: String, in monitored: String) -> [String] {
        monitored.components(separatedBy: "\nmethod call ").flatMap { $0.components(separatedBy: "\nsignal ") }
            .filter { $0.contains("member=\(member)\n") || $0.hasSuffix("member=\(member)") }
    }

    /// The first integer after `marker`: `variant int32 42` → 42.
    static func firstInt(after marker: String, in text: String) -> Int? {
        guard let range = text.range(of: marker) else { return nil }
        let rest = text[range.upperBound...]
        guard let typeRange = rest.range(of: "int32 ") else { return nil }
        return Int(rest[typeRange.upperBound...].prefix { $0.isNumber })
    }
}
