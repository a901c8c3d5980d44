import Foundation
import Testing
import TestSupport
import PackAuthoring
@testable import Packs

/// Installing, updating and removing packs in an app group's namespace.
@Suite(.ownThreads) struct PackStoreTests {
    let root = TestPlugins.scratch.appendingPathComponent("store-\(UUID().uuidString)")

    /// A version of the pack `level-1`: `sky` holds `text`.
    func version(_ number: Int, sky text: String, previous: DownloadManifest? = nil) throws -> (String, DownloadManifest.Entry, DownloadManifest) {
        let source = root.appendingPathComponent("source-\(number)")
        try FileManager.default.createDirectory(at: source.appendingPathComponent("textures"), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: source.appendingPathComponent("textures/sky.ktx"))
        if number == 1 { try Data("old".utf8).write(to: source.appendingPathComponent("textures/old.ktx")) }
        try Data(#"{"assetPackID":"level-1","downloadPolicy":{"onDemand":{}},"fileSelectors":[{"directory":"textures"}]}"#.utf8)
            .write(to: source.appendingPathComponent("Manifest.json"))
        let archive = source.appendingPathComponent("level-1.tar.zst").path
        try PackArchive.package(manifestPath: source.appendingPathComponent("Manifest.json").path, output: archive)
        let manifest = try DownloadManifest.create(archives: [archive], baseURL: "https://cdn.example.com", previous: previous)
        return (archive, manifest.assetPacks[0], manifest)
    }

    func read(_ store: PackStore, _ path: String) -> String? {
        FileManager.default.contents(atPath: store.folder(of: "level-1").appendingPathComponent(path).path)
            .map { String(decoding: $0, as: UTF8.self) }
    }

    func staged(_ store: PackStore) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: store.root.appendingPathComponent(".staging").path)) ?? []
    }

    @Test func anUpdateReplacesThePackWhole() throws {
        let store = PackStore(root: root.appendingPathComponent("AssetPacks"))
        let (archive1, entry1, manifest1) = try version(1, sky: "blue")
        try store.install(archive: archive1, entry: entry1)
        #expect(read(store, "textures/sky.ktx") == "blue" && read(store, "textures/old.ktx") == "old")
        #expect(store.installed("level-1")?.version == 1)

        let (archive2, entry2, _) = try version(2, sky: "red", previous: manifest1)
        #expect(entry2.version == 2)
        try store.install(archive: archive2, entry: entry2)
        #expect(read(store, "textures/sky.ktx") == "red")
        #expect(read(store, "textures/old.ktx") == nil, "a file of the old version survived the update")
        #expect(store.installed().mapValues(\.version) == ["level-1": 2])
        #expect(staged(store).isEmpty)
    }

    @Test func aRefusedArchiveLeavesTheInstalledVersionAsItWas() throws {
        let store = PackStore(root: root.appendingPathComponent("AssetPacks"))
        let (archive1, entry1, manifest1) = try version(1, sky: "blue")
        try store.install(archive: archive1, entry: entry1)
        let (archive2, promised, _) = try version(2, sky: "red", previous: manifest1)
        var entry2 = promised
        // The server's archive does not match what its download manifest promised.
        entry2.files[0].sha256 = String(repeating: "0", count: 64)
        #expect(throws: PackError.self) { try store.install(archive: archive2, entry: entry2) }
        #expect(read(store, "textures/sky.ktx") == "blue" && store.installed("level-1")?.version == 1)
        #expect(staged(store).isEmpty)
    }

    /// Copies `archive` to `partial` a few bytes at a time on a thread of its own, as a transfer writes it, then
    /// says how it ended.
    func arrive(_ archive: String, at partial: String, into growing: GrowingArchive, abandonAfter: Int? = nil) -> Thread {
        let bytes = FileManager.default.contents(atPath: archive) ?? Data()
        let thread = Thread {
            let fd = open(partial, O_WRONLY | O_APPEND | O_CLOEXEC)
            defer { close(fd) }
            var offset = 0
            while offset < bytes.count {
                if let abandonAfter, offset >= abandonAfter {
                    growing.abandon()
                    return
                }
                let chunk = bytes[offset..<min(bytes.count, offset + 97)]
                _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                offset += chunk.count
                usleep(200)
            }
            growing.finish(length: Int64(bytes.count))
        }
        thread.start()
        return thread
    }

    /// A pack unpacked while its archive arrives is the pack its archive holds; the reader waits at the file's end
    /// and takes the archive whole.
    @Test func aPackUnpacksWhileItsArchiveArrives() throws {
        let store = PackStore(root: root.appendingPathComponent("AssetPacks"))
        let sky = (0..<600).map { _ in UUID().uuidString }.joined()  // incompressible enough to arrive in pieces
        let (archive, entry, _) = try version(1, sky: sky)
        let partial = root.appendingPathComponent("arriving.partial").path
        #expect(FileManager.default.createFile(atPath: partial, contents: nil))
        let growing = try GrowingArchive(path: partial)
        _ = arrive(archive, at: partial, into: growing)
        let unpacked = try store.unpack(growing, entry: entry)
        growing.drain()
        #expect(growing.readWhole)
        try store.install(unpacked, entry: entry)
        #expect(read(store, "textures/sky.ktx") == sky)
        #expect(read(store, "textures/old.ktx") == "old" && store.installed("level-1")?.version == 1)
        #expect(staged(store).isEmpty)
    }

    /// A transfer that ends without the archive stops the unpacking with an error, and nothing is left staged.
    @Test func anAbandonedArchiveStopsTheUnpackingAndLeavesNothing() throws {
        let store = PackStore(root: root.appendingPathComponent("AssetPacks"))
        let (archive, entry, _) = try version(1, sky: (0..<600).map { _ in UUID().uuidString }.joined())
        let partial = root.appendingPathComponent("abandoned.partial").path
        #expect(FileManager.default.createFile(atPath: partial, contents: nil))
        let growing = try GrowingArchive(path: partial)
        _ = arrive(archive, at: partial, into: growing, abandonAfter: 2000)
        #expect(throws: PackError.self) { try store.unpack(growing, entry: entry) }
        #expect(!growing.readWhole)
        #expect(staged(store).isEmpty && store.installed().isEmpty)
    }

    @Test func aRemovedPackLeavesTheNamespaceAndLeftoversAreCleanedUp() throws {
        let store = PackStore(root: root.appendingPathComponent("AssetPacks"))
        let (archive, entry, _) = try version(1, sky: "blue")
        try store.install(archive: archive, entry: entry)
        try store.remove("level-1")
        #expect(store.installed().isEmpty && read(store, "textures/sky.ktx") == nil)

        // What a kill leaves in the middle of an install.
        let leftover = store.root.appendingPathComponent(".staging/level-1.3.x/textures")
        try FileManager.default.createDirectory(at: leftover, withIntermediateDirectories: true)
        store.removeLeftovers()
        #expect(staged(store).isEmpty)
    }

    @Test func anUpdateFromChangedFilesAloneIsCheckedAndSwappedInWhole() throws {
        let store = PackStore(root: root.appendingPathComponent("AssetPacks"))
        let (archive1, entry1, manifest1) = try version(1, sky: "blue")
        try store.install(archive: archive1, entry: entry1)
        let (_, entry2, _) = try version(2, sky: "red", previous: manifest1)
        // Version 2 changes sky.ktx and drops old.ktx: only sky.ktx is fetched.
        let changed = entry2.changedFiles(since: entry1.files)
        #expect(changed.map(\.path) == ["textures/sky.ktx"])
        let fetched = root.appendingPathComponent("fetched-sky")
        try Data("red".utf8).write(to: fetched)
        try store.installUpdate(entry: entry2, changed: ["textures/sky.ktx": fetched.path])
        #expect(read(store, "textures/sky.ktx") == "red" && read(store, "textures/old.ktx") == nil)
        #expect(store.installed("level-1")?.version == 2 && staged(store).isEmpty)

        // A fetched file that is not what the index says is refused, and version 2 stays.
        let (_, entry3, _) = try version(3, sky: "green", previous: try DownloadManifest.create(
            archives: [try version(2, sky: "red").0], baseURL: "https://cdn.example.com", previous: manifest1))
        let tampered = root.appendingPathComponent("fetched-green")
        try Data("not green".utf8).write(to: tampered)
        #expect(throws: PackError.self) { try store.installUpdate(entry: entry3, changed: ["textures/sky.ktx": tampered.path]) }
        #expect(read(store, "textures/sky.ktx") == "red" && store.installed("level-1")?.version == 2)
        #expect(staged(store).isEmpty)
    }
}
