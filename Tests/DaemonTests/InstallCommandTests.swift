import Foundation
import Testing
import TestSupport

/// `bahost install`, `update` and `launch` against a real daemon: what they wait for and how they fail.
@Suite(.ownThreads) struct InstallCommandTests {
    let nginx = Nginx.shared

    @Test func launchReportsAnEssentialDownloadThatFailedAndUpdateRunsTheUpdateRequest() throws {
        let dir = "inst-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data(count: 1000), at: "\(dir)/present.pack")
        try nginx.serve(Data("""
            {"assets": [
              {"id": "present", "url": "\(nginx.https("\(dir)/present.pack"))", "size": 1000, "essential": true},
              {"id": "missing", "url": "\(nginx.https("\(dir)/missing.pack"))", "size": 1000, "essential": true}
            ]}
            """.utf8), at: "\(dir)/manifest.json")
        let app = try TestApp(manifestURL: nginx.https("\(dir)/manifest.json"), plugin: TestPlugins.swiftExample)
        let daemon = try ServiceDaemon()

        let install = try daemon.report(["install", app.folder.path])
        #expect(install.status == 2)
        let failures = install.report["essentialFailures"] as? [[String: Any]] ?? []
        #expect(failures.map { $0["identifier"] as? String } == ["missing"])
        #expect((failures.first?["error"] as? String)?.contains("404") == true)

        let launch = try daemon.bahost(["launch", app.identifier])
        #expect(launch.status == 2)
        #expect(launch.stdout.contains("missing: BAHostErrorDomain 404"), "\(launch.stdout)")
        let statusReport = try daemon.report(["debug", "status"]).report
        let status = statusReport["apps"] as? [[String: Any]]
        #expect(status?.first?["launched"] as? Bool == true)
        #expect(statusReport["abiVersion"] as? String == "1.2")
        #expect(try daemon.bahost(["debug", "status"]).stdout.contains("extension ABI 1.2"))
        // What the sandbox can do here, probed at start (this machine's kernel has it all).
        let sandbox = try #require(statusReport["sandbox"] as? [String: Any])
        #expect(sandbox["off"] as? Bool == false)
        #expect(sandbox["pidNamespaces"] as? Bool == true && (sandbox["landlockABI"] as? Int ?? 0) >= 6, "\(sandbox)")
        #expect(sandbox["missing"] as? [String] == [])

        // Installing twice is refused; update runs the update request and keeps the launch.
        let again = try daemon.report(["install", app.folder.path])
        #expect(again.status == 2)
        #expect((again.report["error"] as? String)?.contains("already installed") == true)
        let update = try daemon.report(["update", app.folder.path])
        #expect(update.report["request"] as? String == "update")
        #expect(daemon.logText.contains("returning 1 downloads for update"))
        let after = try daemon.report(["debug", "status"]).report["apps"] as? [[String: Any]]
        #expect(after?.first?["launched"] as? Bool == true)
    }

    @Test func foldersThatAreNotAppsAreRefusedWithTheReason() throws {
        let daemon = try ServiceDaemon()
        let empty = TestPlugins.scratch.appendingPathComponent("empty-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let noPlist = try daemon.report(["install", empty.path])
        #expect(noPlist.status == 2)
        #expect((noPlist.report["error"] as? String)?.contains("Info.plist") == true)

        let app = try TestApp(manifestURL: nginx.https("nothing"), plugin: TestPlugins.swiftExample)
        try FileManager.default.copyItem(
            at: app.folder.appendingPathComponent("extension.so"), to: app.folder.appendingPathComponent("second.so"))
        let twoObjects = try daemon.report(["install", app.folder.path])
        #expect((twoObjects.report["error"] as? String)?.contains("BAHostExtension") == true)

        let notInstalled = try daemon.report(["update", app.folder.path])
        #expect((notInstalled.report["error"] as? String)?.contains("not installed") == true)
        #expect(try daemon.report(["launch", "com.example.nothing"]).status == 2)
        #expect(try daemon.report(["debug", "simulate", "--app", "com.example.nothing", "--event", "periodic"]).status == 2)

        // A `bahost run` on the service's data root would perform the same transfers twice: refused.
        let beside = try Bahost.run([
            "run", "--plugin", TestPlugins.swiftExample, "--event", "install", "--info-plist",
            app.folder.appendingPathComponent("Info.plist").path, "--data-root", daemon.dataRoot.path,
        ])
        #expect(beside.status == 70)
        #expect(beside.stderr.contains("another bahost"), "\(beside.stderr)")

        // No service: exit 69 with the reason.
        daemon.stop(SIGTERM)
        let down = try daemon.bahost(["debug", "status"])
        #expect(down.status == 69)
        #expect(down.stderr.contains("bahost daemon"))
    }
}
