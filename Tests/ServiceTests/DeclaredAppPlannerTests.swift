import Foundation
import Vocabulary
@testable import Service
import Testing
import TestSupport

/// The rules that turn declared-app folders into installs, updates and uninstalls, with no folder or service: each
/// scan is a list of what was found, at a moment of a clock the test moves.
@Suite(.ownThreads) struct DeclaredAppPlannerTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int64(seconds * 1000)) }

    func folder(_ app: String = "com.example.levels", version: String? = "1", print: String = "a",
                root: String = "/usr/share/bahost/apps", problem: String? = nil) -> ObservedAppFolder {
        ObservedAppFolder(
            appIdentifier: app, folder: "\(root)/\(app)", version: problem == nil ? version : nil, fingerprint: print,
            problem: problem)
    }

    func record(_ app: String = "com.example.levels", version: String = "1", state: DeclaredAppRecord.State = .installed,
                root: String = "/usr/share/bahost/apps") -> DeclaredAppRecord {
        DeclaredAppRecord(appIdentifier: app, folder: "\(root)/\(app)", version: version, state: state)
    }

    func planner() -> DeclaredAppPlanner { DeclaredAppPlanner(settle: .seconds(1), removalGrace: .seconds(10)) }

    @Test func aNewFolderIsInstalledOnceItHasSettled() {
        var planner = planner()
        let first = planner.plan(observed: [folder()], recorded: [], installed: [], now: at(0))
        #expect(first.actions.isEmpty && first.recheck == at(1))
        #expect(planner.waiting["com.example.levels"] != nil)
        let settled = planner.plan(observed: [folder()], recorded: [], installed: [], now: at(1))
        #expect(settled.actions == [.install(folder())] && settled.recheck == nil)
        // Recorded as installed, the same version asks for nothing more.
        #expect(planner.plan(observed: [folder()], recorded: [record()], installed: ["com.example.levels"], now: at(2))
            .actions.isEmpty)
    }

    /// A package manager writes a folder one file at a time: while what the scan sees changes, nothing is done.
    @Test func aFolderStillBeingWrittenIsNotActedOn() {
        var planner = planner()
        for (second, print) in [(0.0, "a"), (0.9, "b"), (1.8, "c"), (2.7, "d")] {
            #expect(planner.plan(observed: [folder(print: print)], recorded: [], installed: [], now: at(second))
                .actions.isEmpty)
        }
        #expect(planner.plan(observed: [folder(print: "d")], recorded: [], installed: [], now: at(3.7)).actions
            == [.install(folder(print: "d"))])
    }

    @Test func aNewVersionOrFolderIsAnUpdate() {
        var planner = planner()
        let two = folder(version: "2")
        _ = planner.plan(observed: [two], recorded: [record()], installed: ["com.example.levels"], now: at(0))
        #expect(planner.plan(observed: [two], recorded: [record()], installed: ["com.example.levels"], now: at(1)).actions
            == [.update(two, from: "1")])
        let moved = folder(root: "/home/u/.local/share/bahost/apps")
        var other = self.planner()
        _ = other.plan(observed: [moved], recorded: [record()], installed: ["com.example.levels"], now: at(0))
        #expect(other.plan(observed: [moved], recorded: [record()], installed: ["com.example.levels"], now: at(1)).actions
            == [.update(moved, from: "1")])
    }

    /// Uninstall removes the app's assets: only a folder that stays gone for the grace, counted afresh at a start.
    @Test func aFolderGoneForTheGraceIsUninstalledAndOneThatReturnsIsNot() {
        var planner = planner()
        let installed: Set<String> = ["com.example.levels"]
        let gone = planner.plan(observed: [], recorded: [record()], installed: installed, now: at(0))
        #expect(gone.actions.isEmpty && gone.recheck == at(10))
        #expect(planner.plan(observed: [], recorded: [record()], installed: installed, now: at(9.9)).actions.isEmpty)
        // Back (an upgrade replaced it): the count starts over, and nothing happens.
        #expect(planner.plan(observed: [folder()], recorded: [record()], installed: installed, now: at(9.95)).actions
            .isEmpty)
        #expect(planner.plan(observed: [], recorded: [record()], installed: installed, now: at(10.5)).actions.isEmpty)
        #expect(planner.plan(observed: [], recorded: [record()], installed: installed, now: at(20.5)).actions
            == [.uninstall(appIdentifier: "com.example.levels")])
    }

    /// What a killed service left under way is carried out again at the next start.
    @Test func anInterruptedActionIsCarriedOutAgain() {
        var planner = planner()
        _ = planner.plan(observed: [folder(version: "2")], recorded: [], installed: [], now: at(0))
        let installing = record(version: "2", state: .installing)
        #expect(planner.plan(observed: [folder(version: "2")], recorded: [installing], installed: ["com.example.levels"],
                             now: at(1)).actions == [.install(folder(version: "2"))])
        let updating = record(version: "2", state: .updating)
        #expect(planner.plan(observed: [folder(version: "2")], recorded: [updating], installed: ["com.example.levels"],
                             now: at(2)).actions == [.update(folder(version: "2"), from: "2")])
        var fresh = self.planner()
        #expect(fresh.plan(observed: [], recorded: [record(state: .uninstalling)], installed: [], now: at(0)).actions
            == [.uninstall(appIdentifier: "com.example.levels")])
    }

    /// A folder that is not an app is refused once for each change of it, never installed; fixed, it is installed.
    @Test func aFolderThatIsNotAnAppIsRefusedOnce() {
        var planner = planner()
        let broken = folder(print: "x", problem: "Info.plist: is not an XML property list")
        _ = planner.plan(observed: [broken], recorded: [], installed: [], now: at(0))
        #expect(planner.plan(observed: [broken], recorded: [], installed: [], now: at(1)).actions == [.refuse(broken)])
        #expect(planner.plan(observed: [broken], recorded: [], installed: [], now: at(2)).actions.isEmpty)
        let fixed = folder(print: "y")
        _ = planner.plan(observed: [fixed], recorded: [], installed: [], now: at(3))
        #expect(planner.plan(observed: [fixed], recorded: [], installed: [], now: at(4)).actions == [.install(fixed)])
    }

    /// Both ways agree: an app `bahost install` installed that a package now declares is updated from the package's
    /// folder; one no package declares is never uninstalled by the folders.
    @Test func appsInstalledByTheCommandLine() {
        var planner = planner()
        _ = planner.plan(observed: [folder()], recorded: [], installed: ["com.example.levels", "com.example.dev"], now: at(0))
        let plan = planner.plan(
            observed: [folder()], recorded: [], installed: ["com.example.levels", "com.example.dev"], now: at(20))
        #expect(plan.actions == [.update(folder(), from: nil)])
    }

    /// The first folder of an app wins: the user's own data before the system's.
    @Test func theFirstFolderOfAnAppWins() {
        var planner = planner()
        let user = folder(version: "9", root: "/home/u/.local/share/bahost/apps")
        _ = planner.plan(observed: [user, folder()], recorded: [], installed: [], now: at(0))
        #expect(planner.plan(observed: [user, folder()], recorded: [], installed: [], now: at(1)).actions == [.install(user)])
    }
}

/// What a scan makes of the folders: where it looks, and why a folder is not an app.
@Suite(.ownThreads) struct DeclaredAppFoldersTests {
    @Test func theXDGFoldersInOrderTheUsersFirst() {
        let standard = DeclaredAppFolders.standard(environment: ["HOME": "/home/u"])
        #expect(standard.roots == [
            "/home/u/.local/share/bahost/apps", "/usr/local/share/bahost/apps", "/usr/share/bahost/apps",
        ])
        let set = DeclaredAppFolders.standard(environment: [
            "HOME": "/home/u", "XDG_DATA_HOME": "/data", "XDG_DATA_DIRS": "/opt/share:relative:/usr/share",
        ])
        #expect(set.roots == ["/data/bahost/apps", "/opt/share/bahost/apps", "/usr/share/bahost/apps"])
    }

    @Test func aFolderThatIsNotAnAppSaysWhy() throws {
        let root = TestPlugins.scratch.appendingPathComponent("scan-\(UUID().uuidString.prefix(8))")
        func app(_ name: String, _ values: [String: Any], extension: Bool = true) throws -> ObservedAppFolder {
            let folder = root.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            var plist: [String: Any] = [
                "CFBundleIdentifier": name, "CFBundleVersion": "1", "BAAppGroupID": "group.\(name)",
                "BAManifestURL": "https://assets.example.com/m", "BAMaxInstallSize": 1,
                "BAInitialDownloadRestrictions": ["BADownloadAllowance": 1, "BADownloadDomainAllowList": ["a.example"]] as [String: Any],
            ]
            plist.merge(values) { $1 }
            try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
                .write(to: folder.appendingPathComponent("Info.plist"))
            if `extension` { try Data("so".utf8).write(to: folder.appendingPathComponent("extension.so")) }
            return DeclaredAppFolders.observe(folder.path, name: name)
        }
        let good = try app("com.example.good", [:])
        #expect(good.problem == nil && good.version == "1")
        #expect(try app("com.example.unversioned", ["CFBundleVersion": ""]).problem?.contains("no CFBundleVersion") == true)
        #expect(try app("com.example.named", ["CFBundleIdentifier": "com.example.other"]).problem
            == "the folder is named com.example.named, not after the app's CFBundleIdentifier com.example.other")
        #expect(try app("com.example.bare", [:], extension: false).problem?.contains("holds no extension") == true)
        // What the folder holds is its fingerprint: a change to a file changes it.
        let before = DeclaredAppFolders.fingerprint(root.appendingPathComponent("com.example.good").path)
        try Data("other".utf8).write(to: root.appendingPathComponent("com.example.good/extension.so"))
        #expect(DeclaredAppFolders.fingerprint(root.appendingPathComponent("com.example.good").path) != before)
        #expect(DeclaredAppFolders(roots: [root.path]).scan().map(\.appIdentifier) == [
            "com.example.bare", "com.example.good", "com.example.named", "com.example.unversioned",
        ])
    }
}
