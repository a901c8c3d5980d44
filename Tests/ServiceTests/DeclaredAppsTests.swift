import Foundation
@testable import Service
import Testing
import TestSupport

/// Apps that packages declare in a folder, against a real daemon following a folder of its own: installed, updated
/// and uninstalled without a command, also for changes made while the daemon was down; folders that are not apps
/// refused with the reason; `bahost install` and the folders agreeing.
@Suite(.ownThreads, .serialized) struct DeclaredAppsTests {
    let nginx = Nginx.shared

    /// An app folder as a package lays it out: Info.plist with a CFBundleVersion, and the Swift example extension.
    struct PackagedApp {
        let identifier = "com.example.levels"
        let folder: URL
        let manifestURL: String

        func write(version: String) throws {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let values: [String: Any] = [
                "CFBundleIdentifier": identifier, "CFBundleVersion": version, "BAAppGroupID": "group.com.example.levels",
                "BAManifestURL": manifestURL,
                "BAInitialDownloadRestrictions": [
                    "BADownloadAllowance": 10_000_000, "BAEssentialDownloadAllowance": 10_000_000,
                    "BADownloadDomainAllowList": ["localhost"],
                ] as [String: Any],
                "BAMaxInstallSize": 10_000_000,
            ]
            let plugin = folder.appendingPathComponent("extension.so").path
            if !FileManager.default.fileExists(atPath: plugin) {
                try FileManager.default.copyItem(atPath: TestPlugins.swiftExample, toPath: plugin)
            }
            try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
                .write(to: folder.appendingPathComponent("Info.plist"), options: .atomic)
        }
    }

    func served(essential: Int) throws -> String {
        let dir = "declared-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data(count: essential), at: "\(dir)/level-1.pack")
        try nginx.serve(Data("""
            {"assets": [{"id": "level-1", "url": "\(nginx.https("\(dir)/level-1.pack"))", "size": \(essential), "essential": true}]}
            """.utf8), at: "\(dir)/manifest.json")
        return nginx.https("\(dir)/manifest.json")
    }

    func declared(_ daemon: ServiceDaemon) throws -> [String: Any] {
        try daemon.report(["debug", "status"]).report["declaredApps"] as? [String: Any] ?? [:]
    }

    func lastActions(_ daemon: ServiceDaemon) throws -> [String] {
        try declared(daemon)["lastActions"] as? [String] ?? []
    }

    func installedApps(_ daemon: ServiceDaemon) throws -> [String] {
        (try daemon.report(["debug", "status"]).report["apps"] as? [[String: Any]] ?? []).compactMap { $0["app"] as? String }
    }

    @Test func aDeclaredAppIsInstalledUpdatedAndUninstalledWithoutACommand() throws {
        let apps = TestPlugins.scratch.appendingPathComponent("apps-\(UUID().uuidString.prefix(8))")
        let app = PackagedApp(folder: apps.appendingPathComponent("com.example.levels"), manifestURL: try served(essential: 4096))
        let daemon = try ServiceDaemon(extra: [
            "--apps-folder", apps.path, "--settle-seconds", "0.2", "--removal-grace-seconds", "1",
        ])
        #expect(try (declared(daemon)["folders"] as? [String]) == [apps.path])

        // Installed: the folder did not exist when the daemon started (its parent is watched).
        try app.write(version: "1.0")
        #expect(try ServiceDaemon.waitUntil(20) { try lastActions(daemon).first?.hasPrefix("installed com.example.levels 1.0") == true },
                "\((try? lastActions(daemon)) ?? [])\n\(daemon.logText)")
        // The launch waits for the essential download, which the install request queued.
        let launch = try daemon.bahost(["launch", app.identifier])
        #expect(launch.status == 0, "\(launch.stdout)\(launch.stderr)")
        let asset = daemon.dataRoot.appendingPathComponent("containers/group.com.example.levels/Assets/level-1")
        #expect(FileManager.default.fileExists(atPath: asset.path))
        #expect(daemon.logText.contains("returning 1 downloads for install"))

        // A new CFBundleVersion is an update; the same version again is nothing.
        try app.write(version: "1.1")
        #expect(try ServiceDaemon.waitUntil(20) { try lastActions(daemon).first?.hasPrefix("updated com.example.levels 1.0 → 1.1") == true },
                "\((try? lastActions(daemon)) ?? [])")
        // The extension got the update request (and has level-1 already).
        #expect(daemon.logText.contains("returning 0 downloads for update"))

        // Uninstalling it by command is refused: its package declares it.
        let uninstall = try daemon.report(["uninstall", app.identifier])
        #expect(uninstall.status == 2)
        #expect((uninstall.report["error"] as? String)?.contains("declared by a package") == true)

        // Changed while the daemon was down: the update fires at its start.
        daemon.stop(SIGTERM)
        try app.write(version: "2.0")
        try daemon.restart()
        #expect(try ServiceDaemon.waitUntil(20) { try lastActions(daemon).first?.hasPrefix("updated com.example.levels 1.1 → 2.0") == true },
                "\((try? lastActions(daemon)) ?? [])")

        // Gone while the daemon was down: uninstalled once it has stayed gone for the grace, assets with it.
        daemon.stop(SIGTERM)
        try FileManager.default.removeItem(at: app.folder)
        try daemon.restart()
        #expect(try ServiceDaemon.waitUntil(20) { try lastActions(daemon) == ["uninstalled com.example.levels"] },
                "\((try? lastActions(daemon)) ?? [])")
        #expect(try installedApps(daemon).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: asset.path))
    }

    /// A folder that is not an app, or not yet one, is refused with the reason in the log and the status, and never
    /// half-installed; made whole, it is installed.
    @Test func aFolderThatIsNotAnAppIsRefusedWithTheReason() throws {
        let apps = TestPlugins.scratch.appendingPathComponent("apps-\(UUID().uuidString.prefix(8))")
        let daemon = try ServiceDaemon(extra: ["--apps-folder", apps.path, "--settle-seconds", "0.2"])
        let folder = apps.appendingPathComponent("com.example.levels")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("<?xml version=\"1.0\"?><plist><dict><key>CFBundleIdent".utf8)
            .write(to: folder.appendingPathComponent("Info.plist"))
        let misnamed = apps.appendingPathComponent("com.example.other")
        let app = PackagedApp(folder: misnamed, manifestURL: try served(essential: 100))
        try app.write(version: "1")
        #expect(try ServiceDaemon.waitUntil(20) { (try declared(daemon)["refused"] as? [String: String])?.count == 2 },
                "\((try? declared(daemon)) ?? [:])")
        let refused = try declared(daemon)["refused"] as? [String: String] ?? [:]
        #expect(refused[folder.path]?.contains("Info.plist") == true, "\(refused)")
        #expect(refused[misnamed.path]?.contains("not after the app's CFBundleIdentifier com.example.levels") == true)
        #expect(daemon.logText.contains("declared apps: refused \(folder.path)"))
        #expect(try installedApps(daemon).isEmpty)
        #expect(try daemon.bahost(["debug", "status"]).stdout.contains("refused \(misnamed.path)"))

        // The broken one made whole: installed.
        try FileManager.default.removeItem(at: misnamed)
        try PackagedApp(folder: folder, manifestURL: try served(essential: 100)).write(version: "1")
        #expect(try ServiceDaemon.waitUntil(20) { try installedApps(daemon) == ["com.example.levels"] })
        #expect(try (declared(daemon)["refused"] as? [String: String]) == [:])
    }

    /// `bahost install` of a development folder and a package's folder agree: the package's version updates the
    /// app, and an app no package declares is left alone.
    @Test func theCommandLineAndTheFoldersAgree() throws {
        let apps = TestPlugins.scratch.appendingPathComponent("apps-\(UUID().uuidString.prefix(8))")
        let daemon = try ServiceDaemon(extra: [
            "--apps-folder", apps.path, "--settle-seconds", "0.2", "--removal-grace-seconds", "0.5",
        ])
        let development = try TestApp(identifier: "com.example.dev", manifestURL: try served(essential: 100), plugin: TestPlugins.swiftExample)
        #expect(try daemon.report(["install", development.folder.path]).status == 0)
        let levels = try TestApp(manifestURL: try served(essential: 100), plugin: TestPlugins.swiftExample)
        #expect(try daemon.report(["install", levels.folder.path]).status == 0)
        try PackagedApp(folder: apps.appendingPathComponent("com.example.levels"), manifestURL: try served(essential: 100))
            .write(version: "3")
        #expect(try ServiceDaemon.waitUntil(20) {
            try lastActions(daemon).first?.hasPrefix("updated com.example.levels (installed with bahost install) → 3") == true
        }, "\((try? lastActions(daemon)) ?? [])")
        Thread.sleep(forTimeInterval: 1)
        #expect(Set(try installedApps(daemon)) == ["com.example.dev", "com.example.levels"])
    }
}
