import Foundation
import Testing
import TestSupport

/// Completions reach the app's delegate when the app runs with one, and the extension otherwise: real daemon, real
/// app processes (`levels-app`), real extension processes, real nginx.
@Suite(.ownThreads) struct DelegateRoutingTests {
    let nginx = Nginx.shared

    /// A daemon with the Swift example app installed: one essential and one other asset in its manifest.
    func installed() throws -> (ServiceDaemon, TestApp, String) {
        let service = try ExampleAppService()
        return (service.daemon, service.app, service.dir)
    }

    @Test(arguments: LevelsApp.everyMode) func aRunningAppWithADelegateGetsItsCompletionsInsteadOfTheExtension(levelsApp: LevelsApp) throws {
        let appPath = try levelsApp.path
        let (daemon, app, dir) = try installed()
        let extra = Data.random(count: 150_000)
        try nginx.serve(extra, at: "\(dir)/extra.pack")
        // `bahost launch` waits for the essentials, then runs the app as this app.
        let launched = try Bahost.run([
            "launch", app.identifier, "--socket", daemon.socket, "--", appPath, "--json", "--wait-for", "1",
            "--timeout", "30", "--schedule", "extra=\(nginx.https("\(dir)/extra.pack"))@150000",
        ])
        #expect(launched.status == 0, "\(launched.stdout)\n\(launched.stderr)")
        let events = launched.events()
        #expect(events.contains { $0["event"] as? String == "schedule" && $0["ok"] as? Bool == true })
        #expect(events.contains { $0["event"] as? String == "began" && $0["identifier"] as? String == "extra" })
        let finished = try #require(events.first { $0["event"] as? String == "finished" && $0["identifier"] as? String == "extra" })
        // The app's delegate moved the file out of the host's folder into the group's container.
        let path = try #require(finished["path"] as? String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == extra)
        #expect(path.hasPrefix(app.container(in: daemon.dataRoot).path))
        // Delivered once, to the app: the extension never saw it.
        let row = try #require(try daemon.downloads(app.identifier)["extra"])
        #expect(row["delivered"] as? Bool == true)
        #expect(!daemon.logText.contains("kept extra"))
    }

    /// A `@MainActor` controller as the delegate (Swift 6 mode, as SwiftUI apps write it): its methods run on the main
    /// queue, in order, and it keeps the completion, exactly once.
    @Test func aMainActorDelegateGetsItsCallbacksOnTheMainActor() throws {
        let (daemon, app, dir) = try installed()
        let extra = Data.random(count: 150_000)
        try nginx.serve(extra, at: "\(dir)/extra.pack")
        let launched = try Bahost.run([
            "launch", app.identifier, "--socket", daemon.socket, "--", try LevelsApp.swift.path, "--json",
            "--delegate", "main-actor", "--wait-for", "1", "--timeout", "30",
            "--schedule", "extra=\(nginx.https("\(dir)/extra.pack"))@150000",
        ])
        #expect(launched.status == 0, "\(launched.stdout)\n\(launched.stderr)")
        let events = launched.events()
        let began = try #require(events.first { $0["event"] as? String == "began" })
        #expect(began["mainQueue"] as? Bool == true)
        let finished = try #require(events.first { $0["event"] as? String == "finished" })
        #expect(finished["mainQueue"] as? Bool == true)
        #expect(finished["sawBegin"] as? Bool == true)
        let path = try #require(finished["path"] as? String)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == extra)
        #expect(try daemon.downloads(app.identifier)["extra"]?["delivered"] as? Bool == true)
        #expect(!daemon.logText.contains("kept extra"))
    }

    @Test(arguments: LevelsApp.all) func anAppWithoutTheCompletionMethodsLeavesThemToTheExtension(levelsApp: LevelsApp) throws {
        let (daemon, app, dir) = try installed()
        try nginx.serve(Data.random(count: 120_000), at: "\(dir)/extra.pack")
        _ = try daemon.bahost(["launch", app.identifier])
        // Runs with a delegate that has only downloadDidBegin: begin reaches it, the completion goes to the extension.
        let running = try levelsApp.start(
            ["--delegate", "progress-only", "--schedule", "extra=\(nginx.https("\(dir)/extra.pack"))@120000", "--stay", "30"],
            app: app.identifier, daemon: daemon)
        defer { running.process.terminate() }
        #expect(try ServiceDaemon.waitUntil { try daemon.downloads(app.identifier)["extra"]?["delivered"] as? Bool == true })
        #expect(ServiceDaemon.waitUntil(5) { daemon.logText.contains("kept extra at") })
        #expect(FileManager.default.fileExists(atPath: app.container(in: daemon.dataRoot).appendingPathComponent("Assets/extra").path))
        running.process.terminate()
        running.process.waitUntilExit()
        let output = String(decoding: running.out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(output.contains(#""event":"began""#))
        #expect(!output.contains(#""event":"finished""#))
    }

    @Test(arguments: LevelsApp.all) func withNoAppRunningTheExtensionIsWoken(levelsApp: LevelsApp) throws {
        let (daemon, app, dir) = try installed()
        try nginx.serve(Data.random(count: 100_000), at: "\(dir)/extra.pack")
        let scheduled = try levelsApp.run(
            ["--delegate", "none", "--schedule", "extra=\(nginx.https("\(dir)/extra.pack"))@100000"], app: app.identifier,
            daemon: daemon)
        #expect(scheduled.status == 0)
        #expect(try ServiceDaemon.waitUntil { try daemon.downloads(app.identifier)["extra"]?["delivered"] as? Bool == true })
        #expect(ServiceDaemon.waitUntil(5) { daemon.logText.contains("kept extra at") })
    }

    @Test(arguments: LevelsApp.everyMode) func aChallengeIsAnsweredByTheAppsDelegate(levelsApp: LevelsApp) throws {
        let (daemon, app, dir) = try installed()
        let secret = Data.random(count: 90_000)
        try nginx.serve(secret, at: "private/\(dir)/secret.pack")
        _ = try daemon.bahost(["launch", app.identifier])
        let url = nginx.https("private/\(dir)/secret.pack")
        let answered = try levelsApp.run(
            ["--schedule", "secret=\(url)@90000", "--credential", "\(Nginx.user):\(Nginx.password)", "--wait-for", "1",
             "--timeout", "30"], app: app.identifier, daemon: daemon)
        let events = answered.events()
        let challenge = try #require(events.first { $0["event"] as? String == "challenge" }, "\(answered.stdout)")
        #expect(challenge["realm"] as? String == "levels")
        #expect(challenge["host"] as? String == "localhost")
        let finished = try #require(events.first { $0["event"] as? String == "finished" })
        #expect(try Data(contentsOf: URL(fileURLWithPath: finished["path"] as? String ?? "")) == secret)

        // Cancelling the challenge fails the download with the server's 401.
        let refused = try levelsApp.run(
            ["--schedule", "again=\(url)@90000", "--wait-for", "1", "--timeout", "30"], app: app.identifier, daemon: daemon)
        let failed = try #require(refused.events().first { $0["event"] as? String == "failed" }, "\(refused.stdout)")
        #expect((failed["error"] as? String)?.contains("401") == true)
    }
}
