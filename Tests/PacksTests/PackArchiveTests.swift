import CArchive
import Crypto
import Foundation
import Testing
import TestSupport
@testable import Packs

/// Packs as `bahost pack` writes them, and archives written by someone else to get out of the pack.
@Suite struct PackArchiveTests {
    func folder() -> URL {
        let url = TestPlugins.scratch.appendingPathComponent("packs-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    func write(_ text: String, to url: URL) {
        try! FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try! Data(text.utf8).write(to: url)
    }

    /// A pack source: a manifest selecting one file and one folder.
    func source(id: String = "level-1", policy: String = #"{"onDemand":{}}"#) -> URL {
        let root = folder()
        write("{\"level\":1}", to: root.appendingPathComponent("levels/1.json"))
        write("sky", to: root.appendingPathComponent("textures/1/sky.ktx"))
        write("sea", to: root.appendingPathComponent("textures/1/deep/sea.ktx"))
        write(
            """
            {"assetPackID": "\(id)", "downloadPolicy": \(policy),
             "fileSelectors": [{"file": "levels/1.json"}, {"directory": "textures/1"}],
             "platforms": [], "userInfo": {"difficulty": 3}}
            """, to: root.appendingPathComponent("Manifest.json"))
        return root
    }

    // MARK: Packing

    @Test func aPackedPackUnpacksToTheSameFiles() throws {
        let root = source(policy: #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#)
        let archive = root.appendingPathComponent("level-1.tar.zst").path
        var reported = 0
        let index = try PackArchive.package(
            manifestPath: root.appendingPathComponent("Manifest.json").path, output: archive) { files, _ in reported = files }
        #expect(index.files.map(\.path) == ["levels/1.json", "textures/1/deep/sea.ktx", "textures/1/sky.ktx"])
        #expect(reported == 3 && index.installedSize == 17)
        #expect(index.manifest.downloadPolicy == .essential(installationEventTypes: [.firstInstallation]))
        #expect(index.manifest.userInfo == .object(["difficulty": .number(3)]))
        #expect(try PackArchive.readIndex(archive) == index)

        let staging = folder().appendingPathComponent("staging")
        try PackArchive.extract(archive, expected: index, into: staging)
        #expect(try String(contentsOf: staging.appendingPathComponent("textures/1/deep/sea.ktx"), encoding: .utf8) == "sea")
        #expect(try String(contentsOf: staging.appendingPathComponent("levels/1.json"), encoding: .utf8) == "{\"level\":1}")
    }

    @Test func theSameFilesMakeTheSameArchive() throws {
        let root = source()
        let manifest = root.appendingPathComponent("Manifest.json").path
        try PackArchive.package(manifestPath: manifest, output: root.appendingPathComponent("a").path)
        try PackArchive.package(manifestPath: manifest, output: root.appendingPathComponent("b").path)
        #expect(
            FileManager.default.contents(atPath: root.appendingPathComponent("a").path)
                == FileManager.default.contents(atPath: root.appendingPathComponent("b").path))
    }

    @Test func manifestsAppleRefusesAreRefused() throws {
        for (id, policy, expected) in [
            ("level_1", #"{"onDemand":{}}"#, "underscore"),
            ("../up", #"{"onDemand":{}}"#, "may hold only"),
            ("level-1", #"{"prefetch":{"installationEventTypes":[]}}"#, "at least one of installationEventTypes"),
            ("level-1", #"{"essential":{},"onDemand":{}}"#, "exactly one of"),
        ] {
            let root = source(id: id, policy: policy)
            #expect {
                try PackArchive.package(
                    manifestPath: root.appendingPathComponent("Manifest.json").path,
                    output: root.appendingPathComponent("out").path)
            } throws: { error in
                "\(error)".contains(expected)
            }
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("out").path))
        }
    }

    @Test func aLinkInTheSourceIsNotPacked() throws {
        let root = source()
        symlink("/etc/passwd", root.appendingPathComponent("textures/1/passwd").path)
        #expect {
            try PackArchive.package(
                manifestPath: root.appendingPathComponent("Manifest.json").path,
                output: root.appendingPathComponent("out").path)
        } throws: { error in
            "\(error)".contains("not a regular file")
        }
    }

    /// Apple's 27 selectors: a glob, a file and a folder packed at other paths, an exclusion applied last, all from
    /// `sourceRoot`; and a localized pack's language.
    @Test func theSelectorsOf27PickTheFilesTheySay() throws {
        let root = folder()
        let assets = root.appendingPathComponent("assets")
        for path in ["sounds/a.ogg", "sounds/deep/b.ogg", "sounds/c.wav", "build/out/map.bin", "maps/1/m.json",
                     "maps/1/m.psd", "voice/fr/hello.txt"] {
            write(path, to: assets.appendingPathComponent(path))
        }
        write(
            """
            {"assetPackID": "mixed", "downloadPolicy": {"onDemand": {}}, "sourceRoot": "assets", "language": "fr",
             "fileSelectors": [
               {"filePattern": "sounds/**/*.ogg"},
               {"fileSource": "build/out/map.bin", "fileDestination": "map.bin"},
               {"directorySource": "maps/1", "directoryDestination": "levels/one"},
               {"directorySource": "voice/fr", "directoryDestination": "voice"},
               {"fileExclusion": "**/*.psd"}
             ]}
            """, to: root.appendingPathComponent("Manifest.json"))
        let (manifest, files) = try PackArchive.evaluate(manifestPath: root.appendingPathComponent("Manifest.json").path)
        #expect(manifest.language == "fr")
        #expect(files.map(\.path) == ["levels/one/m.json", "map.bin", "sounds/a.ogg", "sounds/deep/b.ogg", "voice/hello.txt"])
        #expect(files.first { $0.path == "map.bin" }?.source == assets.appendingPathComponent("build/out/map.bin").path)
        let archive = root.appendingPathComponent("mixed.tar.zst").path
        let index = try PackArchive.package(manifestPath: root.appendingPathComponent("Manifest.json").path, output: archive)
        #expect(index.files.map(\.path) == files.map(\.path))
        #expect(try PackArchive.readIndex(archive).manifest.language == "fr")
    }

    @Test func selectorsAndLanguagesThatCannotBeAreRefused() throws {
        for (extra, selectors, expected) in [
            (#""language": "fr_FR","#, #"[{"file": "a.txt"}]"#, "not a BCP-47 language tag"),
            ("", #"[{"fileSource": "a.txt"}]"#, "needs a \"fileDestination\""),
            ("", #"[{"fileSource": "a.txt", "fileDestination": "../a.txt"}]"#, "a.txt"),
            ("", #"[{"filePattern": "../*"}]"#, "must be relative and stay inside the pack"),
            ("", #"[{"fileExclusion": "*"}]"#, "selects no files"),
            ("", #"[{"file": "a.txt"}, {"fileSource": "b.txt", "fileDestination": "a.txt"}]"#, "two files go to"),
        ] {
            let root = folder()
            write("a", to: root.appendingPathComponent("a.txt"))
            write("b", to: root.appendingPathComponent("b.txt"))
            write(
                "{\"assetPackID\": \"p\", \"downloadPolicy\": {\"onDemand\": {}}, \(extra) \"fileSelectors\": \(selectors)}",
                to: root.appendingPathComponent("Manifest.json"))
            #expect {
                try PackArchive.evaluate(manifestPath: root.appendingPathComponent("Manifest.json").path)
            } throws: { error in
                "\(error)".contains(expected)
            }
        }
    }

    /// A Steam depot build script as a pack manifest (`bahost pack convert`), checked by what the manifest selects.
    @Test func aSteamDepotScriptBecomesAPackManifest() throws {
        let root = folder()
        for path in ["game.bin", "data/levels/1.dat", "data/debug.pdb", "extras/readme.txt", "tools/a.cfg", "tools/deep/b.cfg"] {
            write(path, to: root.appendingPathComponent("content/\(path)"))
        }
        write(
            """
            // The game's depot.
            "DepotBuildConfig"
            {
                "DepotID" "1001"
                "ContentRoot" "..\\content\\"
                "FileMapping" { "LocalPath" "*" "DepotPath" "." "recursive" "1" }
                "FileMapping" { "LocalPath" "extras\\readme.txt" "DepotPath" "docs" }
                "FileMapping" { "LocalPath" "tools/*.cfg" "DepotPath" "config" "recursive" "0" } [$WIN32]
                "FileExclusion" "*.pdb"
            }
            """, to: root.appendingPathComponent("scripts/depot_build_1001.vdf"))
        let manifestPath = root.appendingPathComponent("Manifest.json").path
        let manifest = try SteamDepotConversion.convert(
            scriptPath: root.appendingPathComponent("scripts/depot_build_1001.vdf").path, manifestPath: manifestPath,
            assetPackID: nil, downloadPolicy: .onDemand)
        #expect(manifest.assetPackID == "depot-1001")
        // ContentRoot is relative to the script; sourceRoot to the manifest, which sits above it.
        #expect(manifest.sourceRoot == "content")
        try JSONEncoder().encode(manifest).write(to: URL(fileURLWithPath: manifestPath))
        let (_, files) = try PackArchive.evaluate(manifestPath: manifestPath)
        #expect(files.map(\.path) == [
            "config/a.cfg", "data/levels/1.dat", "docs/readme.txt", "extras/readme.txt", "game.bin", "tools/a.cfg",
            "tools/deep/b.cfg",
        ], "\(manifest.fileSelectors)")
    }

    // MARK: Hostile archives

    /// One entry of a hand-made archive.
    struct Entry {
        var path: String
        var data: Data = Data("x".utf8)
        /// The size the header claims; the data's by default.
        var declaredSize: Int64?
        var symlink: String?
    }

    /// Writes `entries` after an index of `files` (by default, what the entries really hold).
    func craft(_ entries: [Entry], files: [PackFile]? = nil) -> (String, PackIndex) {
        let files = files ?? entries.map {
            PackFile(path: $0.path, size: Int64($0.data.count), sha256: SHA256.hash(data: $0.data).map { String(format: "%02x", $0) }.joined())
        }
        let index = PackIndex(
            manifest: PackManifest(assetPackID: "evil", downloadPolicy: .onDemand, fileSelectors: [.file("x")]),
            files: files)
        let path = folder().appendingPathComponent("evil.tar.zst").path
        let archive = archive_write_new()!
        archive_write_set_format_pax_restricted(archive)
        archive_write_add_filter_zstd(archive)
        archive_write_open_filename(archive, path)
        func add(_ name: String, _ data: Data, size: Int64, symlink: String? = nil) {
            let entry = archive_entry_new()!
            archive_entry_set_pathname_utf8(entry, name)
            if let symlink {
                archive_entry_set_filetype(entry, 0o120000)
                archive_entry_set_symlink_utf8(entry, symlink)
                archive_entry_set_size(entry, 0)
            } else {
                archive_entry_set_filetype(entry, 0o100000)
                archive_entry_set_size(entry, size)
            }
            archive_entry_set_perm(entry, 0o644)
            archive_write_header(archive, entry)
            if symlink == nil { _ = data.withUnsafeBytes { archive_write_data(archive, $0.baseAddress, $0.count) } }
            archive_entry_free(entry)
        }
        add(PackArchive.indexPath, try! JSONEncoder().encode(index), size: Int64(try! JSONEncoder().encode(index).count))
        for entry in entries {
            add(entry.path, entry.data, size: entry.declaredSize ?? Int64(entry.data.count), symlink: entry.symlink)
        }
        archive_write_close(archive)
        archive_write_free(archive)
        return (path, index)
    }

    /// Unpacking fails with an error containing `expected`, and nothing lands beside the staging folder.
    func refuses(_ archive: (String, PackIndex), expected index: PackIndex? = nil, _ expected: String) {
        let parent = folder()
        let staging = parent.appendingPathComponent("staging")
        #expect {
            try PackArchive.extract(archive.0, expected: index ?? archive.1, into: staging)
        } throws: { error in
            "\(error)".contains(expected)
        }
        // The staging folder is all there is (it may not have been made at all).
        #expect(Set((try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? []).isSubset(of: ["staging"]))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/escape"))
    }

    @Test func pathsLeavingThePackAreRefused() {
        refuses(craft([Entry(path: "../escape")]), "has a '..' component")
        refuses(craft([Entry(path: "a/../../escape")]), "has a '..' component")
        refuses(craft([Entry(path: "/tmp/escape")]), "leaves the pack")
        refuses(craft([Entry(path: "a//b")]), "has a '' component")
        refuses(craft([Entry(path: "a\nb")]), "control character")
        refuses(craft([Entry(path: ".bapack/index.json")]), "archive's own")
    }

    @Test func linksAreRefused() {
        let link = Entry(path: "escape", symlink: "/etc")
        let files = [PackFile(path: "escape", size: 0, sha256: String(repeating: "0", count: 64))]
        refuses(craft([link], files: files), "a link or a special file")
    }

    @Test func moreBytesThanDeclaredAreRefused() {
        // The index says 1 byte; the archive carries a million of zeros (a bomb once compressed).
        let bomb = Data(count: 1 << 20)
        let files = [PackFile(path: "big", size: 1, sha256: String(repeating: "0", count: 64))]
        refuses(craft([Entry(path: "big", data: bomb)], files: files), "not the 1 declared")
    }

    @Test func aFileThatIsNotWhatTheIndexSaysIsRefused() {
        let files = [PackFile(path: "a", size: 1, sha256: String(repeating: "0", count: 64))]
        refuses(craft([Entry(path: "a")], files: files), "has SHA-256")
        let once = craft([Entry(path: "a")]).1.files
        refuses(craft([Entry(path: "a"), Entry(path: "a")], files: once), "appears twice")
        let (path, index) = craft([Entry(path: "a")])
        var promised = index
        promised.files.append(PackFile(path: "b", size: 1, sha256: String(repeating: "0", count: 64)))
        refuses((path, index), expected: promised, "lists other files than its download manifest")
    }

    @Test func aCorruptArchiveIsRefused() throws {
        let (path, index) = craft([Entry(path: "a", data: Data(repeating: 7, count: 100_000))])
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: path))
        refuses((path, index), "corrupt pack archive")
        try Data("not an archive at all".utf8).write(to: URL(fileURLWithPath: path))
        refuses((path, index), "corrupt pack archive")
    }

    // MARK: The download manifest

    @Test func theDownloadManifestListsEachPackAtTheBaseURLAndVersionsChanges() throws {
        let one = source(id: "level-1")
        let two = source(id: "level-2")
        let a = one.appendingPathComponent("a.tar.zst").path
        let b = two.appendingPathComponent("b.tar.zst").path
        try PackArchive.package(manifestPath: one.appendingPathComponent("Manifest.json").path, output: a)
        try PackArchive.package(manifestPath: two.appendingPathComponent("Manifest.json").path, output: b)
        let first = try DownloadManifest.create(archives: [b, a], baseURL: "https://cdn.example.com/packs", previous: nil)
        #expect(first.assetPacks.map(\.id) == ["level-1", "level-2"])
        #expect(first.assetPacks.map(\.url) == ["https://cdn.example.com/packs/level-1", "https://cdn.example.com/packs/level-2"])
        #expect(first.assetPacks.allSatisfy { $0.version == 1 && $0.files.count == 3 })
        #expect(try DownloadManifest(data: first.encoded()) == first)

        write("sky, brighter", to: two.appendingPathComponent("textures/1/sky.ktx"))
        try PackArchive.package(manifestPath: two.appendingPathComponent("Manifest.json").path, output: b)
        let second = try DownloadManifest.create(archives: [a, b], baseURL: "https://cdn.example.com/packs/", previous: first)
        #expect(second.assetPacks.map(\.version) == [1, 2])

        #expect {
            try DownloadManifest.create(archives: [a, a], baseURL: "https://cdn.example.com", previous: nil)
        } throws: { error in
            "\(error)".contains("the pack 'level-1' is named twice")
        }
    }

    @Test func aServedManifestNamingAPackTwiceIsRefused() throws {
        let root = source()
        let archive = root.appendingPathComponent("a.tar.zst").path
        try PackArchive.package(manifestPath: root.appendingPathComponent("Manifest.json").path, output: archive)
        var manifest = try DownloadManifest.create(archives: [archive], baseURL: "https://cdn.example.com", previous: nil)
        manifest.assetPacks.append(manifest.assetPacks[0])
        #expect {
            try DownloadManifest(data: manifest.encoded())
        } throws: { error in
            "\(error)".contains("names the pack 'level-1' twice")
        }
    }
}
