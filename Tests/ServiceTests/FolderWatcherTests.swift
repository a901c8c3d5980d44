import Foundation
@testable import Service
import Testing
import TestSupport

/// The declared-apps watcher on real inotify: a change in a watched folder is told, and re-arming is not a change
/// (a watch removed reports `IN_IGNORED`: told as a change, the service reconciled without end).
@Suite(.ownThreads) struct FolderWatcherTests {
    @Test func aChangeIsToldAndReArmingIsNot() async throws {
        let root = TestPlugins.freshFolder("watched")
        let app = root.appendingPathComponent("com.example.levels")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        let watcher = FolderWatcher()
        watcher.arm(roots: [root.path], folders: [app.path])
        for _ in 0..<3 { watcher.arm(roots: [root.path], folders: [app.path]) }
        watcher.arm(roots: [root.path], folders: [])
        await watcher.changed.wait(for: .milliseconds(300))
        #expect(!watcher.takeChange())

        try Data("x".utf8).write(to: root.appendingPathComponent("com.example.other"))
        let start = ContinuousClock.now
        while !watcher.takeChange(), ContinuousClock.now - start < .seconds(10) {
            await watcher.changed.wait(for: .milliseconds(100))
        }
        #expect(ContinuousClock.now - start < .seconds(10))
    }

    /// A package manager makes a root's whole path at once, maybe between the watcher finding the root's deepest
    /// folder and watching it (no watch reports what was made then): arming looks again, so that once the service
    /// has armed for every change told, a file made in the root is told.
    @Test func aRootMadeWhileArmingIsWatched() async throws {
        let base = TestPlugins.freshFolder("made-while-arming")
        let root = base.appendingPathComponent("share/bahost/apps")
        let watcher = FolderWatcher()
        watcher.arm(roots: [root.path], folders: []) {
            try? FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        }
        // The service's loop: each change told is followed by arming again, until none is told.
        while true {
            await watcher.changed.wait(for: .milliseconds(100))
            guard watcher.takeChange() else { break }
            watcher.arm(roots: [root.path], folders: [])
        }
        try Data("x".utf8).write(to: root.appendingPathComponent("com.example.levels"))
        let start = ContinuousClock.now
        while !watcher.takeChange(), ContinuousClock.now - start < .seconds(5) {
            await watcher.changed.wait(for: .milliseconds(100))
        }
        #expect(ContinuousClock.now - start < .seconds(5), "a file made in the root was not told")
    }

    @Test func aBatchOfOnlyIgnoredEventsHoldsNoChange() {
        func event(_ mask: Int32, name: String = "") -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 16)
            let padded = name.isEmpty ? 0 : (name.utf8.count / 16 + 1) * 16
            withUnsafeBytes(of: UInt32(bitPattern: mask)) { bytes.replaceSubrange(4..<8, with: $0) }
            withUnsafeBytes(of: UInt32(padded)) { bytes.replaceSubrange(12..<16, with: $0) }
            return bytes + Array(name.utf8) + [UInt8](repeating: 0, count: padded - name.utf8.count)
        }
        let ignored = event(Int32(IN_IGNORED))
        #expect(!FolderWatcher.holdsAChange(ArraySlice(ignored + ignored)))
        #expect(FolderWatcher.holdsAChange(ArraySlice(ignored + event(Int32(IN_CREATE), name: "Info.plist"))))
        #expect(FolderWatcher.holdsAChange(ArraySlice(event(Int32(IN_DELETE_SELF)) + ignored)))
    }
}
