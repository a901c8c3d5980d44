import Foundation
import Testing
import TestSupport

/// What an app process asks of the service: exclusive control with its extension, cancel and promote, and only
/// ever its own downloads.
@Suite(.ownThreads) struct AppRequestTests {
    let nginx = Nginx.shared

    /// A daemon with an app whose manifest is `manifest` and whose extension is `plugin`, launched.
    func installed(
        _ identifier: String = "com.example.levels", group: String = "group.com.example.levels", manifest: String = "0",
        plugin: String? = nil, daemon: ServiceDaemon? = nil
    ) throws -> (ServiceDaemon, TestApp) {
        let dir = "req-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data(manifest.utf8), at: "\(dir)/manifest")
        let app = try TestApp(
            identifier: identifier, group: group, manifestURL: nginx.https("\(dir)/manifest"),
            plugin: try plugin ?? TestPlugins.c("probes/exclusive_control"))
        let daemon = try daemon ?? ServiceDaemon()
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        #expect(try daemon.report(["launch", identifier]).status == 0)
        return (daemon, app)
    }

    /// The error text of the first `event` line, or "".
    func error(_ result: Bahost.Result, _ event: String? = nil) -> String {
        let line = result.events().first { event == nil || $0["event"] as? String == event }
        return line?["error"] as? String ?? ""
    }

    /// The app's first JSON line (what `bahost launch` printed before it ran the app is not JSON), as it comes.
    func firstLine(_ pipe: Pipe) -> [String: Any]? {
        while true {
            var line = Data()
            while true {
                let byte = pipe.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty { return nil }
                if byte == Data("\n".utf8) { break }
                line.append(byte)
            }
            if let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] { return object }
        }
    }

    @Test(arguments: LevelsApp.everyMode) func exclusiveControlHoldsBetweenAppProcessesAndTheExtension(levelsApp: LevelsApp) throws {
        let (daemon, app) = try installed()
        // One app process takes control and holds it for two seconds.
        let holder = try levelsApp.start(
            ["--delegate", "none", "--exclusive-control=-1", "--hold", "2"], app: app.identifier, daemon: daemon)
        #expect(firstLine(holder.out)?["acquired"] as? Bool == true)

        // A second process that may wait 100 ms does not get it; one that waits as long as needed does, after.
        let impatient = try levelsApp.run(
            ["--delegate", "none", "--exclusive-control", "100"], app: app.identifier, daemon: daemon)
        #expect(impatient.events().first?["acquired"] as? Bool == false, "\(impatient.stdout)")
        // The extension (a C probe asking with the manifest's timeout, 0: try once) is refused too. (It acquired
        // control once already, in the install request's window.)
        func count(_ line: String) -> Int { daemon.logText.components(separatedBy: line).count - 1 }
        let acquiredBefore = count("[info] acquired")
        _ = try daemon.report(["debug", "simulate", "--app", app.identifier, "--event", "periodic"])
        #expect(count("[info] refused:") == 1)
        #expect(count("[info] acquired") == acquiredBefore)

        let start = Date()
        let patient = try levelsApp.run(
            ["--delegate", "none", "--exclusive-control=-1"], app: app.identifier, daemon: daemon)
        #expect(patient.events().first?["acquired"] as? Bool == true)
        #expect(Date().timeIntervalSince(start) > 0.5)
        holder.process.waitUntilExit()

        // Released: the extension acquires it now.
        _ = try daemon.report(["debug", "simulate", "--app", app.identifier, "--event", "periodic"])
        #expect(count("[info] acquired") == acquiredBefore + 1)
    }

    @Test(arguments: LevelsApp.all) func cancelAndPromote(levelsApp: LevelsApp) throws {
        let (daemon, app) = try installed(manifest: #"{"assets": []}"#, plugin: TestPlugins.swiftExample)
        let dir = "slow/cp-\(UUID().uuidString.prefix(8))"
        // At /slow/'s 1 MB/s, big takes 24 s: well past the cancel below (about 7 s in). At 6 MB it sometimes
        // finished first, and the cancel found nothing to cancel.
        try nginx.serve(Data(count: 24_000_000), at: "\(dir)/big.pack")
        try nginx.serve(Data(count: 3_000_000), at: "\(dir)/other.pack")
        let big = "big=\(nginx.https("\(dir)/big.pack"))@24000000"
        let scheduled = try levelsApp.run(["--delegate", "none", "--schedule", big, "--list"], app: app.identifier, daemon: daemon)
        #expect(scheduled.events().first { $0["event"] as? String == "currentDownloads" }?["identifiers"] as? [String] == ["big"])

        // Promote: the scheduled download goes to the foreground (the app stays connected, as Apple requires).
        let promoter = try levelsApp.start(["--delegate", "none", "--promote", "big", "--stay", "3"], app: app.identifier, daemon: daemon)
        #expect(firstLine(promoter.out)?["ok"] as? Bool == true)
        #expect(try daemon.downloads(app.identifier)["big"]?["foreground"] as? Bool == true)
        promoter.process.waitUntilExit()
        // Disconnected: back to the background.
        #expect(try ServiceDaemon.waitUntil(5) { try daemon.downloads(app.identifier)["big"]?["foreground"] as? Bool == false })

        // A foreground start of a new download queues it in the foreground.
        let other = try levelsApp.start(
            ["--delegate", "none", "--foreground", "other=\(nginx.https("\(dir)/other.pack"))@3000000", "--stay", "2"],
            app: app.identifier, daemon: daemon)
        #expect(firstLine(other.out)?["ok"] as? Bool == true)
        #expect(try daemon.downloads(app.identifier)["other"]?["foreground"] as? Bool == true)
        other.process.waitUntilExit()

        // Cancel while it runs: gone from the queue, its partial file deleted; a second cancel is 101.
        let cancelled = try levelsApp.run(["--delegate", "none", "--cancel", "big", "--cancel", "big", "--list"], app: app.identifier, daemon: daemon)
        let answers = cancelled.events().filter { $0["event"] as? String == "cancel" }
        #expect(answers.first?["ok"] as? Bool == true, "\(cancelled.stdout)")
        let second = answers.last?["error"] as? String ?? ""
        #expect(second.hasPrefix("BAErrorDomain 101"), "\(cancelled.stdout)")
        let current = cancelled.events().first { $0["event"] as? String == "currentDownloads" }?["identifiers"] as? [String] ?? ["?"]
        #expect(!current.contains("big"))
        let partials = try FileManager.default.contentsOfDirectory(atPath: daemon.dataRoot.appendingPathComponent("transfers").path)
        #expect(!partials.contains { $0.contains("big") })
    }

    /// A newcomer's code: the value the app scheduled (a C struct whose `unique_identifier` it left NULL, a Swift
    /// object) is the one it cancels or promotes. The cancelled download never completes, to the app or its extension.
    @Test(arguments: LevelsApp.all) func theDownloadAnAppScheduledIsTheOneItCancelsOrPromotes(levelsApp: LevelsApp) throws {
        let (daemon, app) = try installed(manifest: #"{"assets": []}"#, plugin: TestPlugins.swiftExample)
        let dir = "slow/own-\(UUID().uuidString.prefix(8))"
        // 2 MB at /slow/'s 1 MB/s: were the cancel refused, the download would finish while the app stays.
        try nginx.serve(Data(count: 2_000_000), at: "\(dir)/gone.pack")
        try nginx.serve(Data(count: 24_000_000), at: "\(dir)/now.pack")
        let cancelled = try levelsApp.run(
            ["--schedule", "gone=\(nginx.https("\(dir)/gone.pack"))@2000000", "--then-cancel", "--stay", "4", "--list"],
            app: app.identifier, daemon: daemon)
        let answer = cancelled.events().first { $0["event"] as? String == "cancel" }
        #expect(answer?["ok"] as? Bool == true, "\(cancelled.stdout)")
        #expect(!cancelled.events().contains { ["finished", "failed"].contains($0["event"] as? String) },
                "\(cancelled.stdout)")
        #expect(try daemon.downloads(app.identifier)["gone"] == nil)
        Thread.sleep(forTimeInterval: 1)
        #expect(!daemon.logText.contains("kept gone"))

        // Promoted with the value it was scheduled with: in the foreground, started at once, while the app stays.
        let promoter = try levelsApp.start(
            ["--schedule", "now=\(nginx.https("\(dir)/now.pack"))@24000000", "--then-promote", "--stay", "3"],
            app: app.identifier, daemon: daemon)
        var promoted: [String: Any]?
        while promoted == nil, let line = firstLine(promoter.out) {
            if line["event"] as? String == "promote" { promoted = line }
        }
        #expect(promoted?["ok"] as? Bool == true, "\(promoted ?? [:])")
        #expect(try ServiceDaemon.waitUntil(2) {
            let row = try daemon.downloads(app.identifier)["now"]
            return row?["foreground"] as? Bool == true && (row?["bytesReceived"] as? Int ?? 0) > 0
        })
        promoter.process.waitUntilExit()
    }

    @Test(arguments: LevelsApp.all) func twoAppsSeeAndTouchOnlyTheirOwnDownloads(levelsApp: LevelsApp) throws {
        let (daemon, levels) = try installed(manifest: #"{"assets": []}"#, plugin: TestPlugins.swiftExample)
        let (_, other) = try installed(
            "com.example.other", group: "group.com.example.other", manifest: #"{"assets": []}"#,
            plugin: TestPlugins.swiftExample, daemon: daemon)
        let dir = "slow/iso-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data(count: 8_000_000), at: "\(dir)/mine.pack")
        _ = try levelsApp.run(
            ["--delegate", "none", "--schedule", "mine=\(nginx.https("\(dir)/mine.pack"))@8000000"], app: levels.identifier,
            daemon: daemon)

        // The other app: its list is empty, and cancelling or scheduling a download of the first app's group is
        // refused (55: levels-app makes its downloads for group.com.example.levels).
        let intruder = try levelsApp.run(
            ["--delegate", "none", "--list", "--cancel", "mine", "--schedule", "x=\(nginx.https("\(dir)/mine.pack"))@8000000"],
            app: other.identifier, daemon: daemon)
        #expect(intruder.events().first { $0["event"] as? String == "currentDownloads" }?["identifiers"] as? [String] == [])
        #expect(error(intruder, "cancel").hasPrefix("BAErrorDomain 55"))
        #expect(error(intruder, "schedule").hasPrefix("BAErrorDomain 55"))
        #expect(try daemon.downloads(levels.identifier)["mine"] != nil)

        // An app that is not installed is not accepted (55); with no service there is no connection (56). (Neither can
        // be launched: these processes only claim to be those apps.)
        let stranger = try levelsApp.runClaiming(["--delegate", "none", "--list"], app: "com.example.stranger", daemon: daemon)
        #expect(error(stranger).hasPrefix("BAErrorDomain 55"), "\(stranger.stdout)")
        daemon.stop(SIGTERM)
        let alone = try levelsApp.runClaiming(["--delegate", "none", "--list"], app: levels.identifier, daemon: daemon)
        #expect(error(alone).hasPrefix("BAErrorDomain 56"), "\(alone.stdout)")
    }

    @Test(arguments: LevelsApp.all) func uninstallRemovesTheAppAndItsContainer(levelsApp: LevelsApp) throws {
        let (daemon, app) = try installed(manifest: #"{"assets": []}"#, plugin: TestPlugins.swiftExample)
        let dir = "slow/un-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data(count: 8_000_000), at: "\(dir)/big.pack")
        _ = try levelsApp.run(
            ["--delegate", "none", "--schedule", "big=\(nginx.https("\(dir)/big.pack"))@8000000"], app: app.identifier,
            daemon: daemon)
        #expect(try daemon.report(["uninstall", app.identifier]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: app.container(in: daemon.dataRoot).path))
        #expect(try ServiceDaemon.waitUntil(5) {
            try FileManager.default.contentsOfDirectory(atPath: daemon.dataRoot.appendingPathComponent("transfers").path)
                .filter { $0.hasSuffix(".part") }.isEmpty
        })
        let gone = try levelsApp.runClaiming(["--delegate", "none", "--list"], app: app.identifier, daemon: daemon)
        #expect(error(gone).hasPrefix("BAErrorDomain 55"))
        #expect(error(gone).contains("no app 'com.example.levels' is installed"), "\(gone.stdout)")
        #expect(try daemon.report(["debug", "downloads", "--app", app.identifier]).status == 2)
    }
}
