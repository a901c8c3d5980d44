import Foundation
import ServiceWire
@testable import Service
import Testing
import TestSupport
import Vocabulary

/// Flatpak apps as the service finds them: declared in the files Flatpak deployed (an installation laid out as
/// Flatpak lays it out, links included), and a peer's Flatpak identity refused when it cannot be
/// proved.
@Suite(.ownThreads) struct FlatpakDeclarationTests {
    let root = TestPlugins.scratch.appendingPathComponent("flatpak-\(UUID().uuidString.prefix(8))").path

    /// Deploys `id` at `commit` as Flatpak does: `app/ID/current → x86_64/stable`, `stable/active → COMMIT`, and
    /// the declaration under `COMMIT/files/share/bahost/DECLARED`.
    func deploy(_ id: String, commit: String, version: String = "1", declared: String? = nil) throws {
        let branch = "\(root)/user/app/\(id)/x86_64/stable"
        let folder = "\(branch)/\(commit)/files/share/bahost/\(declared ?? id)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let plist: [String: Any] = [
            "CFBundleIdentifier": declared ?? id, "CFBundleVersion": version, "BAAppGroupID": "group.\(id)",
            "BAManifestURL": "https://assets.example.com/m", "BAMaxInstallSize": 1,
            "BAInitialDownloadRestrictions": ["BADownloadAllowance": 1, "BADownloadDomainAllowList": ["a.example"]]
                as [String: Any],
        ]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: "\(folder)/Info.plist"))
        try Data("so".utf8).write(to: URL(fileURLWithPath: "\(folder)/extension.so"))
        try? FileManager.default.removeItem(atPath: "\(branch)/active")
        try FileManager.default.createSymbolicLink(atPath: "\(branch)/active", withDestinationPath: commit)
        if !FileManager.default.fileExists(atPath: "\(root)/user/app/\(id)/current") {
            try FileManager.default.createSymbolicLink(
                atPath: "\(root)/user/app/\(id)/current", withDestinationPath: "x86_64/stable")
        }
    }

    var folders: DeclaredAppFolders {
        DeclaredAppFolders(
            roots: ["\(root)/xdg/bahost/apps"], flatpakInstallations: ["\(root)/user", "\(root)/system"],
            home: "/home/u")
    }

    @Test func aFlatpakDeclaresItselfInItsDeployment() throws {
        try deploy("com.example.levels", commit: "aaaa")
        try deploy("com.example.other", commit: "cccc", declared: "com.example.levels")
        let found = folders.scan()
        // Only a folder named after the Flatpak's own ID counts: the other Flatpak's claim to be levels is not seen.
        #expect(found.map(\.appIdentifier) == ["com.example.levels"])
        let levels = try #require(found.first)
        #expect(levels.problem == nil && levels.version == "1")
        #expect(levels.sandboxHome == "/home/u/.var/app/com.example.levels")
        // Installed from the deployment itself, not through the links Flatpak replaces.
        #expect(levels.folder.hasSuffix(
            "/user/app/com.example.levels/x86_64/stable/aaaa/files/share/bahost/com.example.levels"))
        #expect(levels.watched.contains("\(root)/user/app/com.example.levels"))
        #expect(levels.watched.contains { $0.hasSuffix("/user/app/com.example.levels/x86_64/stable") })
        #expect(folders.watchedRoots == ["\(root)/xdg/bahost/apps", "\(root)/user/app", "\(root)/system/app"])
    }

    @Test func anUpdateIsANewDeploymentAndSoTheAppsUpdate() throws {
        try deploy("com.example.levels", commit: "aaaa")
        let before = try #require(folders.scan().first)
        try deploy("com.example.levels", commit: "bbbb")
        let after = try #require(folders.scan().first)
        #expect(after.folder != before.folder && after.version == before.version)
        var planner = DeclaredAppPlanner(settle: .zero, removalGrace: .seconds(10))
        let record = DeclaredAppRecord(
            appIdentifier: "com.example.levels", folder: before.folder, version: "1", state: .installed)
        let plan = planner.plan(observed: [after], recorded: [record], installed: ["com.example.levels"], now: .now)
        #expect(plan.actions == [.update(after, from: "1")])
    }

    @Test func aNativeDeclarationOfTheSameAppComesFirst() throws {
        try deploy("com.example.levels", commit: "aaaa")
        let native = "\(root)/xdg/bahost/apps/com.example.levels"
        try FileManager.default.createDirectory(atPath: native, withIntermediateDirectories: true)
        #expect(folders.scan().map(\.folder).first == native)
        #expect(folders.scan().first?.sandboxHome == nil)
    }

    @Test func theInstallationsFlatpakUses() {
        let standard = DeclaredAppFolders.standard(environment: ["HOME": "/home/u"])
        #expect(standard.flatpakInstallations == ["/home/u/.local/share/flatpak", "/var/lib/flatpak"])
        let moved = DeclaredAppFolders.standard(environment: [
            "HOME": "/home/u", "FLATPAK_USER_DIR": "/fp/user", "FLATPAK_SYSTEM_DIR": "/fp/system",
        ])
        #expect(moved.flatpakInstallations == ["/fp/user", "/fp/system"])
    }

    @Test func aProcessOutsideAnyFlatpakIsNative() {
        let now = FlatpakPeer.bootTicks
        #expect(FlatpakPeer.identify(pid: getpid(), acceptedAt: now, runtimeDirectory: nil) == .native)
    }

    @Test func aPIDThatStartedAfterTheConnectionProvesNothing() {
        guard case .refused(let why) = FlatpakPeer.identify(pid: getpid(), acceptedAt: 0, runtimeDirectory: nil) else {
            Issue.record("a process younger than its connection was identified")
            return
        }
        #expect(why.contains("the PID was reused"))
        let none = Int32.max - 1
        guard case .refused(let gone) = FlatpakPeer.identify(pid: none, acceptedAt: .max, runtimeDirectory: nil) else {
            Issue.record("a process that does not exist was identified")
            return
        }
        #expect(gone.contains("ended before it was identified"))
    }
}
