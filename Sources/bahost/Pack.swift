import ArgumentParser
import Foundation
import PackAuthoring
import Packs
import Vocabulary

/// `bahost pack`: Apple's `ba-package`, for managed asset packs.
struct Pack: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pack",
        abstract: "Describe, package and list managed asset packs (ba-package).",
        subcommands: [Template.self, Package.self, Evaluate.self, Convert.self, DownloadManifestCommand.self])

    struct Template: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "template",
            abstract: "Print a pack manifest to start from (or write it with -o).",
            discussion: """
                Selectors besides file and directory (Apple's 27): {"filePattern": "sounds/**/*.ogg"}, \
                {"fileSource": "build/a.bin", "fileDestination": "a.bin"}, {"directorySource": "build/maps", \
                "directoryDestination": "maps"}, {"fileExclusion": "**/*.psd"} (applied last). "sourceRoot": \
                "assets" makes selector paths start there; "language": "fr" (BCP-47) makes the pack a localized one, \
                downloaded on its own only for the app's resolved language.
                """)
        @Option(name: .shortAndLong, help: "Write it here instead of standard output; an existing file is kept.")
        var output: String?

        func run() throws {
            let template = """
                {
                  "assetPackID": "level-1",
                  "downloadPolicy": {
                    "essential": { "installationEventTypes": ["firstInstallation", "subsequentUpdate"] }
                  },
                  "fileSelectors": [
                    { "file": "levels/1.json" },
                    { "directory": "textures/1" }
                  ],
                  "platforms": [],
                  "userInfo": {}
                }

                """
            guard let output else { return print(template, terminator: "") }
            guard !FileManager.default.fileExists(atPath: output) else {
                throw ValidationError("\(output) exists; choose another path or remove it first")
            }
            try Data(template.utf8).write(to: URL(fileURLWithPath: output))
        }
    }

    struct Package: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "package",
            abstract: "Package the files a pack manifest selects (relative to its folder) into a pack archive.",
            discussion: """
                downloadPolicy is one of {"essential":{"installationEventTypes":[...]}}, {"prefetch":{...}} or \
                {"onDemand":{}}, with the events firstInstallation and subsequentUpdate. The archive is a tar \
                compressed with zstd (tar --zstd -tf lists it) whose first entry indexes every file with its size \
                and SHA-256; the same files always make the same archive.
                """)
        @Argument(help: "The pack manifest (JSON).") var manifest: String
        @Option(name: .shortAndLong, help: "The archive to write (default: ASSET-PACK-ID.tar.zst beside the manifest).")
        var output: String?
        @Flag(help: "Print the result as one JSON object.") var json = false

        func run() throws {
            let destination = try output ?? URL(fileURLWithPath: manifest).deletingLastPathComponent()
                .appendingPathComponent("\(PackArchive.loadManifest(manifest).assetPackID).tar.zst").path
            let start = ContinuousClock.now
            var lastReport = start
            let index = try PackArchive.package(manifestPath: manifest, output: destination) { files, bytes in
                guard !json, ContinuousClock.now - lastReport >= .milliseconds(500) else { return }
                lastReport = .now
                Output.standardError("packed \(files) files, \(bytes) bytes\n")
            }
            let size = (try? FileManager.default.attributesOfItem(atPath: destination)[.size] as? Int64) ?? 0
            if json {
                let object: [String: Any] = [
                    "assetPackID": index.manifest.assetPackID, "archive": destination, "files": index.files.count,
                    "installedSize": index.installedSize, "archiveSize": size,
                    "seconds": (ContinuousClock.now - start).inSeconds,
                ]
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
            } else {
                print("\(index.manifest.assetPackID): \(index.files.count) files, \(index.installedSize) bytes → \(destination) (\(size) bytes)")
            }
        }
    }

    struct Evaluate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "evaluate",
            abstract: "Check a pack manifest and list the files it selects, without packaging them.",
            discussion: "Each file's path in the pack, its size and where it comes from; then the total.")
        @Argument(help: "The pack manifest (JSON).") var manifest: String
        @Flag(help: "Print the result as one JSON object.") var json = false

        func run() throws {
            let (pack, files) = try PackArchive.evaluate(manifestPath: manifest)
            let total = files.reduce(Int64(0)) { $0 + $1.size }
            if json {
                var object: [String: Any] = [
                    "assetPackID": pack.assetPackID, "installedSize": total,
                    "files": files.map { ["path": $0.path, "source": $0.source, "size": $0.size] },
                ]
                if let language = pack.language { object["language"] = language }
                let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                print(String(decoding: data, as: UTF8.self))
                return
            }
            for file in files { print("\(file.path.printable())  \(file.size) bytes  ← \(file.source.printable())") }
            let language = pack.language.map { ", language \($0)" } ?? ""
            print("\(pack.assetPackID)\(language): \(files.count) files, \(total) bytes")
        }
    }

    struct Convert: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "convert",
            abstract: "Make a pack manifest from a Steam depot build script (.vdf).",
            discussion: """
                DepotID names the pack (depot-ID) unless --asset-pack-id does; ContentRoot, relative to the script, \
                becomes sourceRoot; each FileMapping becomes file selectors (a mapping that keeps paths a \
                filePattern, a folder moved elsewhere a directorySource, a wildcard moved elsewhere one fileSource \
                per file found now), and each FileExclusion a fileExclusion. Then check it with bahost pack evaluate.
                """)
        @Argument(help: "The depot build script.") var script: String
        @Option(name: .shortAndLong, help: "The pack manifest to write (default: Manifest.json beside the script); an existing file is kept.")
        var output: String?
        @Option(help: "The pack's ID (default: depot-DEPOTID).") var assetPackID: String?
        @Option(help: "essential, prefetch or on-demand.") var downloadPolicy: PolicyName = .onDemand
        @Option(
            parsing: .upToNextOption,
            help: "For essential and prefetch: the events it downloads on (firstInstallation, subsequentUpdate).")
        var installationEventTypes: [String] = ["firstInstallation", "subsequentUpdate"]

        enum PolicyName: String, ExpressibleByArgument { case essential, prefetch, onDemand = "on-demand" }

        func run() throws {
            let destination = output ?? URL(fileURLWithPath: script).deletingLastPathComponent()
                .appendingPathComponent("Manifest.json").path
            guard !FileManager.default.fileExists(atPath: destination) else {
                throw ValidationError("\(destination) exists; choose another path with -o or remove it first")
            }
            var events = Set<DownloadPolicy.InstallationEvent>()
            for name in installationEventTypes {
                guard let event = DownloadPolicy.InstallationEvent(rawValue: name) else {
                    throw ValidationError("unknown installation event '\(name)': firstInstallation or subsequentUpdate")
                }
                events.insert(event)
            }
            let policy: DownloadPolicy =
                switch downloadPolicy {
                case .essential: .essential(installationEventTypes: events)
                case .prefetch: .prefetch(installationEventTypes: events)
                case .onDemand: .onDemand
                }
            let manifest = try SteamDepotConversion.convert(
                scriptPath: script, manifestPath: destination, assetPackID: assetPackID, downloadPolicy: policy)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            try (encoder.encode(manifest) + Data("\n".utf8)).write(to: URL(fileURLWithPath: destination))
            print("\(manifest.assetPackID): \(manifest.fileSelectors.count) file selectors → \(destination)")
        }
    }

    struct DownloadManifestCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "download-manifest", abstract: "Make the download manifest a server offers.",
            subcommands: [Create.self])

        struct Create: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "create",
                abstract: "List pack archives in a download manifest, each served at the base URL + its pack ID.",
                discussion: """
                    When the output file already exists, a pack whose archive changed gets the next version and an \
                    unchanged one keeps its version; a new pack starts at 1. Name the file in the app's \
                    BAManifestURL.
                    """)
            @Argument(help: "The pack archives (from bahost pack package).") var archives: [String]
            @Option(help: "Where the archives are served: https://HOST/PATH/ (each pack at its URL + ID).")
            var downloadBaseURL: String
            @Option(help: "The download manifest to write.") var outputPath: String
            @Option(
                help: ArgumentHelp(
                    "Also write each pack's files here, one per content (PACK-ID.files/SHA-256), to serve beside the archives at the base URL.",
                    discussion: "An update then fetches only the files that changed, when they are fewer bytes than the archive."))
            var fileObjects: String?
            @Option(help: "The language localized packs fall back to (default: the first their languages offer).")
            var primaryLanguage: String?

            func validate() throws {
                guard !archives.isEmpty else { throw ValidationError("name at least one pack archive") }
            }

            func run() throws {
                let previous = FileManager.default.contents(atPath: outputPath).flatMap { try? DownloadManifest(data: $0) }
                let manifest = try DownloadManifest.create(
                    archives: archives, baseURL: downloadBaseURL, previous: previous,
                    fileObjects: fileObjects.map { URL(fileURLWithPath: $0, isDirectory: true) },
                    primaryLanguage: primaryLanguage)
                let temporary = outputPath + ".partial"
                try manifest.encoded().write(to: URL(fileURLWithPath: temporary))
                guard rename(temporary, outputPath) == 0 else {
                    throw ValidationError("cannot write \(outputPath): \(String(cString: strerror(errno)))")
                }
                for pack in manifest.assetPacks {
                    let language = pack.language.map { " (\($0))" } ?? ""
                    print("\(pack.id)\(language) version \(pack.version): \(pack.files.count) files, \(pack.downloadSize) bytes at \(pack.url)")
                }
            }
        }
    }
}
