import Foundation
import Testing
import TestSupport

/// `bahost check` (the harness as a command) and `bahost new extension`, as a C extension's Makefile and a user run them.
@Suite(.ownThreads) struct CheckAndNewCommandTests {
    var manifest: String { TestPlugins.packageRoot.appendingPathComponent("Plugins/Examples/manifest.txt").path }

    @Test func checkPassesAnExtensionWithinItsBudgetAndNamesWhatItReturned() throws {
        let result = try Bahost.run([
            "check", "--plugin", try TestPlugins.c("example_extension"), "--manifest", manifest, "--within", "5",
            "--json",
        ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let json = try result.json()
        #expect(json["ok"] as? Bool == true)
        #expect(json["downloads"] as? [String] == ["level-1", "level-2"])
        #expect(json["problems"] as? [String] == [])
    }

    @Test func checkFailsAHangingExtensionNamingTheStopReasonAndTheLog() throws {
        let started = ContinuousClock.now
        let result = try Bahost.run([
            "check", "--plugin", try TestPlugins.c("misbehaving/hang_in_entry"), "--manifest", manifest,
            "--budget", "1", "--within", "0.5",
        ])
        #expect(result.status == 1)
        #expect(result.stdout.contains("budget"), "\(result.stdout)")
        #expect(result.stdout.contains("stuck in downloads_for_request"), "the extension's log: \(result.stdout)")
        // The window's budget ends it, not the hang: generous slack for a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    @Test func checkAsksAManagedExtensionAboutAPack() throws {
        let veto = try Bahost.run([
            "check", "--plugin", try TestPlugins.c("probes/managed_veto"), "--asset-pack", "skip-hd-textures", "--json",
        ])
        #expect(veto.status == 0, "\(veto.stdout)\(veto.stderr)")
        #expect(try veto.json()["shouldDownload"] as? Bool == false)
        let unmanaged = try Bahost.run([
            "check", "--plugin", try TestPlugins.c("example_extension"), "--asset-pack", "intro", "--json",
        ])
        // No should_download_asset_pack: Apple's default, the pack downloads.
        #expect(try unmanaged.json()["shouldDownload"] as? Bool == true)
    }

    /// An Apple-hosted app's extension (StoreKit's StoreDownloaderExtension), compiled unchanged, answers as any
    /// managed extension.
    @Test func anAppleHostedExtensionIsServedAsAManagedOne() throws {
        let plugin = TestPlugins.buildFolder.appendingPathComponent("libStoreHostedExampleExtension.so").path
        let skipped = try Bahost.run(["check", "--plugin", plugin, "--asset-pack", "skip-hd-textures", "--json"])
        #expect(skipped.status == 0, "\(skipped.stdout)\(skipped.stderr)")
        #expect(try skipped.json()["shouldDownload"] as? Bool == false)
        let kept = try Bahost.run(["check", "--plugin", plugin, "--asset-pack", "intro", "--json"])
        #expect(try kept.json()["shouldDownload"] as? Bool == true)
    }

    @Test func checkRefusesBadArgumentsWithTheReason() throws {
        let missing = try Bahost.run(["check", "--plugin", "/nonexistent.so"])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains("no extension at /nonexistent.so"))
        let budget = try Bahost.run(["check", "--plugin", try TestPlugins.c("example_extension"), "--budget", "0"])
        #expect(budget.status == 64)
        #expect(budget.stderr.contains("--budget"))
    }

    @Test func newWritesEveryFileOfEachKindOfProjectAndNothingOver() throws {
        let folder = TestPlugins.scratch.appendingPathComponent("new-\(UUID().uuidString)")
        let swift = try Bahost.run(["new", "extension", "--swift", "Levels", "--output", folder.path + "/swift"])
        #expect(swift.status == 0, "\(swift.stderr)")
        let c = try Bahost.run(["new", "extension", "--c", "--managed", "Packs", "--app-identifier", "org.example.packs",
                                "--output", folder.path + "/c"])
        #expect(c.status == 0, "\(c.stderr)")
        func files(_ sub: String) throws -> [String] {
            try FileManager.default.subpathsOfDirectory(atPath: folder.path + "/" + sub).filter {
                var directory: ObjCBool = false
                _ = FileManager.default.fileExists(atPath: folder.path + "/\(sub)/\($0)", isDirectory: &directory)
                return !directory.boolValue
            }.sorted()
        }
        #expect(try files("swift") == [
            ".gitignore", "Info.plist", "Package.swift", "README.md", "Sources/Levels/Levels.swift",
            "Tests/LevelsTests/LevelsTests.swift", "com.example.levels.desktop", "manifest.json",
        ])
        #expect(try files("c") == [
            ".gitignore", "AssetPacks/Intro/Manifest.json", "AssetPacks/Intro/intro/readme.txt", "Info.plist", "Makefile",
            "Packs.c", "README.md", "org.example.packs.desktop",
        ])
        // The menu entry launches the app through bahost launch, which waits for its essential downloads.
        let entry = try String(contentsOfFile: folder.path + "/swift/com.example.levels.desktop", encoding: .utf8)
        #expect(entry.contains("Exec=bahost launch com.example.levels -- levels\n"))
        // The Package.swift lists products before dependencies (SwiftPM's order) and names the released package.
        let package = try String(contentsOfFile: folder.path + "/swift/Package.swift", encoding: .utf8)
        let products = try #require(package.range(of: "products:")), dependencies = try #require(package.range(of: "dependencies: [.package"))
        #expect(products.lowerBound < dependencies.lowerBound)
        #expect(package.contains(#".package(url: "https://github.com/bahost/bahost", from: "#))
        // The Info.plist is one bahost reads: its identity and the managed key.
        let plist = try #require(
            PropertyListSerialization.propertyList(
                from: Data(contentsOf: folder.appendingPathComponent("c/Info.plist")), format: nil) as? [String: Any])
        #expect(plist["CFBundleIdentifier"] as? String == "org.example.packs")
        #expect(plist["BAAppGroupID"] as? String == "group.org.example.packs")
        #expect(plist["BAHasManagedAssetPacks"] as? Bool == true)
        #expect(plist["BAHostExtension"] as? String == "libPacks.so")
        // A folder that has files is never written over.
        let again = try Bahost.run(["new", "extension", "--c", "Packs", "--output", folder.path + "/c"])
        #expect(again.status == 64)
        #expect(again.stderr.contains("exists and is not empty"))
        let bad = try Bahost.run(["new", "extension", "--swift", "my-extension"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("ASCII letters and digits starting with a letter"))
    }
}
