import Foundation
import Testing
import TestSupport

/// An app's identity is proved by its launch, not declared (docs/SERVICE.md, "App identity"): real daemons and real app
/// processes of the same user, some started by `bahost launch`, some only claiming the identifier.
@Suite(.ownThreads) struct AppIdentityTests {
    @Test(arguments: LevelsApp.all) func aProcessThatOnlyClaimsTheIdentifierIsRefusedWith55(levelsApp: LevelsApp) throws {
        let service = try ExampleAppService()
        _ = try service.daemon.bahost(["launch", service.app.identifier])
        let (_, url) = try service.serve("stolen", 10_000)
        let result = try levelsApp.runClaiming(
            ["--schedule", "stolen=\(url)@10000", "--list"], app: service.app.identifier, daemon: service.daemon)
        let schedule = try #require(result.events("schedule").first, "\(result.stdout)\n\(result.stderr)")
        #expect(schedule["ok"] as? Bool == false)
        let error = schedule["error"] as? String ?? ""
        #expect(error.hasPrefix("BAErrorDomain 55"), "\(error)")
        #expect(error.contains("was not started by 'bahost launch com.example.levels -- COMMAND'"), "\(error)")
        #expect(service.daemon.logText.contains("refused a process posing as an app"))
        // Nothing was scheduled in the app's name.
        #expect(try service.daemon.downloads(service.app.identifier)["stolen"] == nil)
    }

    /// What the launched process starts is the app too: a launcher script that runs the real binary.
    @Test(arguments: LevelsApp.all) func aChildOfTheLaunchedProcessIsTheApp(levelsApp: LevelsApp) throws {
        let appPath = try levelsApp.path
        let service = try ExampleAppService()
        let (data, url) = try service.serve("child", 20_000)
        // `; exit $?` keeps the shell from exec'ing the app in its own place: the app is its child.
        let result = try service.daemon.launch(service.app.identifier, "/bin/sh", [
            "-c", "'\(appPath)' --json --schedule 'child=\(url)@20000' --wait-for 1 --timeout 30; exit $?",
        ])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let finished = try #require(result.events("finished").first, "\(result.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: finished["path"] as? String ?? "")) == data)
    }

    /// `bahost launch` hands the app no blocked signal: SIGTERM (a session ending) and Ctrl-C reach it.
    @Test func aLaunchedAppStartsWithNoSignalBlocked() throws {
        let service = try ExampleAppService()
        let result = try service.daemon.launch(service.app.identifier, "/bin/grep", ["^SigBlk", "/proc/self/status"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("SigBlk:\t0000000000000000"), "\(result.stdout)")
    }

    /// The service keeps what it launched across a restart: an app that connects after the service was killed and
    /// started again is still itself.
    @Test(arguments: LevelsApp.all) func aLaunchedAppIsStillItselfAfterTheServiceRestarts(levelsApp: LevelsApp) throws {
        let appPath = try levelsApp.path
        let service = try ExampleAppService()
        let daemon = service.daemon
        let (_, url) = try service.serve("later", 20_000)
        let app = try Bahost.start(daemon.launchCommand(service.app.identifier, "/bin/sh", [
            "-c", "sleep 3; '\(appPath)' --json --schedule 'later=\(url)@20000' --wait-for 1 --timeout 30; exit $?",
        ]))
        // The launch is recorded with the process it runs as the app (the shell, which then sleeps).
        #expect(try ServiceDaemon.waitUntil(10) {
            let apps = try daemon.report(["debug", "status"]).report["apps"] as? [[String: Any]]
            return apps?.first?["launchedProcesses"] as? [Int] == [Int(app.process.processIdentifier)]
        })
        daemon.stop(SIGKILL)
        try daemon.restart()
        let result = Bahost.finish(app)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(!result.events("finished").isEmpty, "\(result.stdout)")
    }
}
