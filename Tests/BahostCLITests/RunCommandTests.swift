import Foundation
import Testing
import TestSupport

/// `bahost run` as a user or a script runs it: the real binary, its exit status, its output.
@Suite(.ownThreads) struct RunCommandTests {
    func bahost(_ arguments: [String], environment: [String: String] = [:]) throws -> Bahost.Result {
        try Bahost.run(arguments, environment: environment)
    }

    var manifest: String { TestPlugins.packageRoot.appendingPathComponent("Plugins/Examples/manifest.txt").path }

    func infoPlist(group: String = "group.com.example.levels", dropping key: String? = nil) throws -> String {
        var values: [String: Any] = [
            "CFBundleIdentifier": "com.example.levels", "BAAppGroupID": group,
            "BAManifestURL": "https://assets.example.com/manifest.txt",
            "BAInitialDownloadRestrictions": [
                "BADownloadAllowance": 10_000_000, "BAEssentialDownloadAllowance": 2_000_000,
                "BADownloadDomainAllowList": ["assets.example.com"],
            ] as [String: Any],
            "BAMaxInstallSize": 10_000_000,
        ]
        if let key { values[key] = nil }
        let data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
        let path = TestPlugins.scratch.appendingPathComponent("\(UUID().uuidString)-Info.plist")
        try data.write(to: path)
        return path.path
    }

    /// A window-only run gives the extension the app group's container its Info.plist names (under the data root),
    /// as every window gets one.
    @Test func aWindowOnlyRunHasTheAppGroupsContainer() throws {
        let root = TestPlugins.scratch.appendingPathComponent("window-only-\(UUID().uuidString)").path
        let result = try bahost([
            "run", "--plugin", try TestPlugins.c("misbehaving/reaches_outside_its_container"), "--event", "install",
            "--manifest", manifest, "--info-plist", try infoPlist(), "--window-only", "--data-root", root, "--json",
        ])
        let report = try result.json()
        let log = (report["log"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
        let container = "\(root)/containers/group.com.example.levels"
        #expect(log.last == "write \(container)/kept: done", "\(log)")
        #expect(FileManager.default.fileExists(atPath: "\(container)/kept"))
    }

    @Test func everyCommandHasHelp() throws {
        let root = try bahost(["--help"])
        #expect(root.status == 0 && root.stdout.contains("run") && root.stdout.contains("resume"))
        let run = try bahost(["run", "--help"])
        #expect(run.status == 0)
        for option in [
            "--plugin", "--event", "--manifest", "--info-plist", "--window-only", "--budget", "--grace", "--json",
            "--data-root", "--ca-file", "--max-concurrent", "--max-per-host", "--retry-delay",
        ] {
            #expect(run.stdout.contains(option), "\(option)")
        }
    }

    @Test func jsonReportOfAWellBehavedExtension() throws {
        let result = try bahost([
            "run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install", "--manifest", manifest,
            "--info-plist", try infoPlist(), "--window-only", "--json",
        ])
        #expect(result.status == 0)
        let json = try result.json()
        #expect((json["stopReason"] as? [String: Any])?["kind"] as? String == "returned")
        #expect(json["extensionIdentifier"] as? String == "com.example.levels.c-extension")
        #expect(json["event"] as? String == "install")
        let downloads = try #require(json["downloads"] as? [[String: Any]])
        #expect(downloads.map { $0["identifier"] as? String } == ["level-1", "level-2"])
        #expect(downloads.map { $0["essential"] as? Bool } == [true, false])
        #expect(downloads.map { $0["fileSize"] as? Int } == [1_048_576, 4_194_304])
        #expect(downloads.allSatisfy { ($0["uniqueIdentifier"] as? String)?.hasPrefix("BAURLDownload.") == true })
        #expect((json["elapsedSeconds"] as? Double ?? 0) > 0)
    }

    @Test func humanReportNamesTheStopReason() throws {
        let result = try bahost([
            "run", "--plugin", try TestPlugins.c("example_extension"), "--event", "periodic", "--manifest", manifest,
        ])
        #expect(result.status == 0)
        #expect(result.stdout.contains("stop reason: returned: every entry point finished"))
        #expect(result.stdout.contains("level-2"))
        #expect(!result.stdout.contains("level-1"))
    }

    @Test func exitStatusSaysWhatKindOfFailure() throws {
        let cases: [(String, Int32, String)] = [
            ("misbehaving/segfault", 4, "crashed"), ("misbehaving/calls_exit", 5, "exited"),
            ("misbehaving/incompatible_abi", 7, "refused-to-load"),
            ("misbehaving/returns_garbage", 8, "protocol-violation"),
            ("misbehaving/hang_in_entry", 3, "budget-exceeded"),
        ]
        for (plugin, status, kind) in cases {
            let result = try bahost([
                "run", "--plugin", try TestPlugins.c(plugin), "--event", "install", "--manifest", manifest,
                "--budget", "1", "--grace", "0.5", "--json",
            ])
            #expect(result.status == status, "\(plugin)")
            #expect((try result.json()["stopReason"] as? [String: Any])?["kind"] as? String == kind, "\(plugin)")
        }
    }

    @Test func downloadsForAnotherAppGroupAreRejected() throws {
        let result = try bahost([
            "run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install", "--manifest", manifest,
            "--info-plist", try infoPlist(group: "group.someone.else"), "--window-only", "--json",
        ])
        #expect(result.status == 2)
        let rejected = try #require(try result.json()["rejected"] as? [[String: Any]])
        #expect(rejected.count == 2)
        #expect(((rejected.first?["error"] as? [String: Any])?["message"] as? String)?.contains("group.someone.else") == true)
    }

    @Test func badArgumentsAreNamed() throws {
        let event = try bahost(["run", "--plugin", "/x.so", "--event", "reboot", "--manifest", manifest])
        #expect(event.status == 64)
        #expect(event.stderr.contains("--event must be one of: install, update, periodic, language-change"))
        let plist = try bahost([
            "run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install", "--manifest", manifest,
            "--info-plist", try infoPlist(dropping: "BAManifestURL"),
        ])
        #expect(plist.status == 64)
        #expect(plist.stderr.contains("the required key BAManifestURL is missing"))
        for threads in ["0", "65"] {
            let loops = try bahost([
                "run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install", "--manifest", manifest,
                "--network-threads", threads,
            ])
            #expect(loops.status == 64, "\(threads)")
            #expect(loops.stderr.contains("--network-threads must be 1 to 64"), "\(threads)")
        }
    }

    @Test func aMissingRunnerIsTheHostsProblemNotTheExtensions() throws {
        let result = try bahost(
            ["run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install", "--manifest", manifest],
            environment: ["BAHOST_RUNNER": "/nonexistent/bahost-extension-runner"])
        #expect(result.status == 70)
        #expect(result.stderr.contains("cannot start /nonexistent/bahost-extension-runner"))
    }
}
