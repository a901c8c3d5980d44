import Foundation
import PackAuthoring
@testable import Packs
import Testing
import TestSupport

/// Packs as `bahost pack` writes them (the hostile archives are PacksTests' `HostileArchiveTests`).
@Suite(.ownThreads) struct PackArchiveTests {
    func folder() -> URL { TestPlugins.freshFolder("packs") }

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
