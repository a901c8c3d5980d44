import Foundation
import Testing
import TestSupport

/// A completion reaches the app's delegate or the extension, once, never both, whichever process dies at whichever
/// step (docs/DOWNLOADS.md, "Exactly once"): real daemons killed with SIGKILL, real app processes (`levels-app`) that answer
/// late or die in their callback, real extension processes, real nginx.
@Suite(.ownThreads) struct ExactlyOnceTests {
    /// How many times the example extension took `identifier` ("kept ID at …" in the daemon's log).
    func keptByTheExtension(_ identifier: String, _ daemon: ServiceDaemon) -> Int {
        daemon.logText.components(separatedBy: "kept \(identifier) at").count - 1
    }

    func launch(_ levelsApp: LevelsApp, _ service: ExampleAppService, _ arguments: [String]) throws -> Bahost.Result {
        try levelsApp.run(arguments, app: service.app.identifier, daemon: service.daemon)
    }

    /// The delegate takes 4 s over a callback the service waits 1 s for: the completion stays with the app (the
    /// extension is not woken for it meanwhile) and counts as delivered once the method returned.
    @Test(arguments: LevelsApp.everyMode) func anAppThatAnswersLateKeepsItsCompletion(levelsApp: LevelsApp) throws {
        let service = try ExampleAppService(extra: ["--app-callback-timeout", "1"])
        let (data, url) = try service.serve("late", 150_000)
        let result = try launch(
            levelsApp, service, ["--schedule", "late=\(url)@150000", "--in-finished", "sleep=4", "--wait-for", "1", "--timeout", "30"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let finished = try #require(result.events().first { $0["event"] as? String == "finished" }, "\(result.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: finished["path"] as? String ?? "")) == data)
        #expect(try ServiceDaemon.waitUntil(10) {
            try service.daemon.downloads(service.app.identifier)["late"]?["delivered"] as? Bool == true
        })
        // Given time to go wrong: the extension never gets it.
        Thread.sleep(forTimeInterval: 2)
        #expect(keptByTheExtension("late", service.daemon) == 0, "\(service.daemon.logText)")
    }

    /// The app ends its process inside the callback, before touching the file: the method never returned, so the
    /// completion is not delivered to the app, and the extension gets it, once.
    @Test(arguments: LevelsApp.everyMode) func anAppThatDiesInItsCallbackLeavesTheCompletionToTheExtension(levelsApp: LevelsApp) throws {
        let service = try ExampleAppService()
        let (data, url) = try service.serve("orphan", 120_000)
        let result = try launch(
            levelsApp, service, ["--schedule", "orphan=\(url)@120000", "--in-finished", "exit", "--wait-for", "1", "--timeout", "30"])
        #expect(result.status == 3, "\(result.stdout)\n\(result.stderr)")
        #expect(result.events().contains { $0["event"] as? String == "finishing" }, "\(result.stdout)")
        #expect(!result.events().contains { $0["event"] as? String == "finished" })
        #expect(try ServiceDaemon.waitUntil {
            try service.daemon.downloads(service.app.identifier)["orphan"]?["delivered"] as? Bool == true
        })
        #expect(ServiceDaemon.waitUntil(5) { keptByTheExtension("orphan", service.daemon) == 1 })
        let kept = service.app.container(in: service.daemon.dataRoot).appendingPathComponent("Assets/orphan")
        #expect(try Data(contentsOf: kept) == data)
        Thread.sleep(forTimeInterval: 2)
        #expect(keptByTheExtension("orphan", service.daemon) == 1)
    }

    /// The delegate moves the file, then the service is killed before the callback returns and the service can
    /// record it; the app's SDK then removes the ticket. The restarted service finds the completion delivered and
    /// hands it to nobody again.
    @Test(arguments: LevelsApp.all) func aServiceKilledAsTheCallbackReturnsDeliversNothingTwice(levelsApp: LevelsApp) throws {
        let service = try ExampleAppService()
        let daemon = service.daemon
        let (data, url) = try service.serve("moved", 110_000)
        let result = try launch(
            levelsApp, service,
            ["--schedule", "moved=\(url)@110000", "--in-finished", "kill=\(daemon.process.processIdentifier)",
             "--wait-for", "1", "--timeout", "30"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        daemon.process.waitUntilExit()
        #expect(daemon.process.terminationReason == .uncaughtSignal && daemon.process.terminationStatus == SIGKILL)
        let finished = try #require(result.events().first { $0["event"] as? String == "finished" }, "\(result.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: finished["path"] as? String ?? "")) == data)

        try daemon.restart()
        #expect(try ServiceDaemon.waitUntil(10) {
            try daemon.downloads(service.app.identifier)["moved"]?["delivered"] as? Bool == true
        })
        Thread.sleep(forTimeInterval: 2)
        #expect(keptByTheExtension("moved", daemon) == 0, "\(daemon.logText)")
    }

    /// The service is killed while the app's delegate is still in its callback, and restarts: the app, still
    /// running, keeps the completion, and when its method returns the completion is delivered to it, not to the
    /// extension.
    @Test(arguments: LevelsApp.all) func aServiceKilledDuringTheCallbackLeavesTheCompletionWithTheApp(levelsApp: LevelsApp) throws {
        let service = try ExampleAppService()
        let daemon = service.daemon
        let (data, url) = try service.serve("slow", 100_000)
        let app = try levelsApp.start(
            ["--schedule", "slow=\(url)@100000", "--in-finished", "sleep=6", "--wait-for", "1", "--timeout", "60"],
            app: service.app.identifier, daemon: daemon)
        // Finished, and so offered to the delegate at once; then the service dies while the delegate sleeps.
        #expect(try ServiceDaemon.waitUntil { try daemon.downloads(service.app.identifier)["slow"]?["state"] as? String == "finished" })
        Thread.sleep(forTimeInterval: 1)
        daemon.stop(SIGKILL)
        try daemon.restart()

        let result = Bahost.finish(app)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(!result.events("finished").isEmpty, "\(result.stdout)")
        let kept = service.app.container(in: daemon.dataRoot).appendingPathComponent("Assets/slow")
        #expect(try Data(contentsOf: kept) == data)
        #expect(try ServiceDaemon.waitUntil(10) {
            try daemon.downloads(service.app.identifier)["slow"]?["delivered"] as? Bool == true
        })
        Thread.sleep(forTimeInterval: 2)
        #expect(keptByTheExtension("slow", daemon) == 0, "\(daemon.logText)")
    }

    /// Two completions in one extension window; the extension returns from the first and stalls in the second, and
    /// the service is killed. The restarted service delivers the first never again (its entry point returned: the
    /// runner had removed its ticket) and the second once more (its entry point never returned).
    @Test func aServiceKilledDuringAWindowDeliversWhatReturnedOnceAndTheRestAgain() throws {
        let nginx = Nginx.shared
        let dir = "once-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data.random(count: 50_000), at: "\(dir)/first.pack")
        try nginx.serve(Data.random(count: 60_000), at: "\(dir)/second.pack")
        try nginx.serve(Data("""
            first \(nginx.https("\(dir)/first.pack")) 50000
            second \(nginx.https("\(dir)/second.pack")) 60000
            """.utf8), at: "\(dir)/manifest.txt")
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/manifest.txt"), plugin: try TestPlugins.c("probes/stalls_on_second_finish"))
        let daemon = try ServiceDaemon()
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        let container = app.container(in: daemon.dataRoot)
        let entries = container.appendingPathComponent("entries")
        func entered() -> [String] {
            ((try? String(contentsOf: entries, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        #expect(ServiceDaemon.waitUntil { entered().contains("entered second") }, "\(daemon.logText)")
        daemon.stop(SIGKILL)
        try daemon.restart()

        #expect(try ServiceDaemon.waitUntil {
            let rows = try daemon.downloads(app.identifier)
            return rows["first"]?["delivered"] as? Bool == true && rows["second"]?["delivered"] as? Bool == true
        }, "\(daemon.logText)")
        Thread.sleep(forTimeInterval: 1)
        #expect(entered() == ["entered first", "entered second", "entered second"], "\(entered())")
        #expect(FileManager.default.fileExists(atPath: container.appendingPathComponent("first").path))
        #expect(FileManager.default.fileExists(atPath: container.appendingPathComponent("second").path))
    }
}
