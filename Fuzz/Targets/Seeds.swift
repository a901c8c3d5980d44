import CBAExtension
import ExtensionWire
import Foundation
import PackAuthoring
import Packs
import ServiceWire
import Vocabulary

/// Valid inputs for each target, made by the same encoders the other party would use, so that the fuzzer starts
/// from the shapes that reach deep into each parser. `bahost-fuzz --write-seeds Fuzz/Corpus` writes them; the
/// repository keeps what it wrote.
extension FuzzTarget {
    public var seeds: [(name: String, data: Data)] {
        switch self {
        case .runnerMessages: return Self.runnerPackets()
        case .serviceFrames: return Self.serviceFrames()
        case .infoPlist: return Self.infoPlists()
        case .packManifest:
            return [
                ("essential", Data(#"{"assetPackID": "intro", "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation", "subsequentUpdate"]}}, "fileSelectors": [{"file": "a.json"}, {"directory": "textures"}], "platforms": ["linux"], "userInfo": {"title": "Intro", "n": [1, 2.5, null, true]}}"#.utf8)),
                ("on-demand", Data(#"{"assetPackID": "bonus", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "bonus"}]}"#.utf8)),
                ("prefetch", Data(#"{"assetPackID": "music", "downloadPolicy": {"prefetch": {"installationEventTypes": ["firstInstallation"]}}, "fileSelectors": [{"file": "m.ogg"}], "platforms": []}"#.utf8)),
                ("selectors-27", Data(#"{"assetPackID": "voice-fr", "language": "fr-CA", "sourceRoot": "assets", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"filePattern": "sounds/**/*.ogg"}, {"fileSource": "a.bin", "fileDestination": "b.bin"}, {"directorySource": "maps/1", "directoryDestination": "maps"}, {"fileExclusion": "**/*.psd"}]}"#.utf8)),
            ]
        case .downloadManifest: return Self.downloadManifests()
        case .packArchive: return Self.packArchives()
        case .downloadRequest:
            return [
                ("plain", Data("https://assets.example.com/levels/level-1.pack".utf8)),
                ("headers", Data("https://cdn.example/a?b=1\nAuthorization: Bearer t\nX-Token: 1\nUser-Agent: game/1".utf8)),
                ("to-encode", Data("https://assets.example.com/level 1/é.pack#part\nCookie: a=b".utf8)),
                ("loopback", Data("http://127.0.0.1:8080/level.pack\nIf-None-Match: \"v1\"".utf8)),
                ("idna", Data("https://bücher.example/a".utf8)),
            ]
        case .flatpakInfo:
            return [
                ("instance", Data("""
                    [Application]
                    name=com.example.levels
                    runtime=runtime/org.freedesktop.Platform/x86_64/24.08

                    [Instance]
                    instance-id=389408077
                    app-path=/var/lib/flatpak/app/com.example.levels/x86_64/stable/e572/files
                    branch=stable
                    flatpak-version=1.14.10
                    """.utf8)),
                ("bare", Data("# a comment\n[Application]\nname = org.example.Game_2\n".utf8)),
            ]
        case .steamDepotScript:
            return [
                ("depot", Data(#"""
                    "DepotBuildConfig"
                    {
                        "DepotID" "1001"
                        "ContentRoot" "../content/"
                        "FileMapping" { "LocalPath" "*" "DepotPath" "." "recursive" "1" }
                        "FileExclusion" "*.pdb"
                    }
                    """#.utf8)),
                ("windows", Data(#"""
                    // A platform condition, bare tokens and Windows separators.
                    "DepotBuildConfig"
                    {
                        "DepotID" "1002" [$WIN32]
                        "ContentRoot" "..\content\"
                        "FileMapping"
                        {
                            "LocalPath" "maps\*.bsp"
                            "DepotPath" "maps\"
                        }
                        FileMapping { LocalPath readme.txt DepotPath docs }
                    }
                    """#.utf8)),
            ]
        case .httpResponse:
            return [
                ("partial", Data("206 1000\r\nContent-Range: bytes 1000-1048575/1048576\r\nETag: \"v1\"\r\nContent-Length: 1047576\r\n".utf8)),
                ("whole", Data("200 0\r\nContent-Length: 1048576\r\nETag: \"v2\"\r\nLast-Modified: Mon, 23 Nov 2026 00:00:00 GMT\r\n".utf8)),
                ("redirect", Data("302 0\r\nLocation: /elsewhere/level.pack?x=1\r\n".utf8)),
                ("retry", Data("503 0\r\nRetry-After: Mon, 23 Nov 2026 00:00:10 GMT\r\n".utf8)),
                ("challenge", Data("401 0\r\nWWW-Authenticate: Basic realm=\"levels\", charset=\"UTF-8\"\r\n".utf8)),
            ]
        }
    }

    private static func packet(_ type: ba_wire_type_t, _ fill: (inout ba_wire_writer_t) -> Void) -> Data {
        var writer = ba_wire_writer_t()
        ba_wire_writer_init(&writer, UInt8(type.rawValue))
        fill(&writer)
        let data = Data(bytes: writer.bytes, count: writer.length)
        ba_wire_writer_free(&writer)
        return data
    }

    private static func runnerPackets() -> [(name: String, data: Data)] {
        func download(_ writer: inout ba_wire_writer_t) {
            "level-1".withCString { identifier in
                "https://assets.example.com/level-1.pack".withCString { url in
                    "group.com.example.levels".withCString { group in
                        "X-Token: 1".withCString { header in
                            var headers: [UnsafePointer<CChar>?] = [header]
                            headers.withUnsafeMutableBufferPointer { list in
                                var d = ba_download_t()
                                d.struct_size = UInt32(MemoryLayout<ba_download_t>.size)
                                d.identifier = identifier
                                d.url = url
                                d.application_group_identifier = group
                                d.file_size = 1_048_576
                                d.priority = 50
                                d.essential = true
                                d.http_headers = UnsafePointer(list.baseAddress)
                                d.http_header_count = 1
                                ba_wire_put_download(&writer, &d)
                            }
                        }
                    }
                }
            }
        }
        return [
            ("hello", packet(BA_WIRE_HELLO) { ba_wire_put_u32(&$0, 1); ba_wire_put_u32(&$0, 1); ba_wire_put_str(&$0, "com.example.ext") }),
            ("load-failed", packet(BA_WIRE_LOAD_FAILED) { ba_wire_put_u8(&$0, 1); ba_wire_put_str(&$0, "dlopen failed") }),
            ("downloads", packet(BA_WIRE_DOWNLOAD) { ba_wire_put_u32(&$0, 1); download(&$0); download(&$0) }),
            ("event-done", packet(BA_WIRE_EVENT_DONE) { ba_wire_put_u32(&$0, 1) }),
            ("answer", packet(BA_WIRE_ANSWER) { ba_wire_put_u32(&$0, 1); ba_wire_put_u8(&$0, 1) }),
            ("file-left", packet(BA_WIRE_FILE_LEFT) { ba_wire_put_u32(&$0, 1) }),
            ("challenge-answer", packet(BA_WIRE_CHALLENGE_ANSWER) {
                ba_wire_put_u32(&$0, 1); ba_wire_put_i32(&$0, 0); ba_wire_put_str(&$0, "player"); ba_wire_put_str(&$0, "level-up")
            }),
            ("schedule", packet(BA_WIRE_CALL) { ba_wire_put_u32(&$0, 7); ba_wire_put_u8(&$0, UInt8(BA_WIRE_SCHEDULE.rawValue)); download(&$0) }),
            ("acquire", packet(BA_WIRE_CALL) { ba_wire_put_u32(&$0, 8); ba_wire_put_u8(&$0, UInt8(BA_WIRE_ACQUIRE_EXCLUSIVE.rawValue)); ba_wire_put_i64(&$0, 500) }),
            ("log", packet(BA_WIRE_LOG) {
                ba_wire_put_i32(&$0, 1); ba_wire_put_str(&$0, "requesting level-1")
                ba_wire_put_i32(&$0, 3); ba_wire_put_str(&$0, "level-2 failed")
            }),
            ("violation", packet(BA_WIRE_VIOLATION) { ba_wire_put_str(&$0, "the download is NULL") }),
            ("sandbox", packet(BA_WIRE_SANDBOX) { ba_wire_put_str(&$0, "processes: a PID namespace") }),
            ("terminate-done", packet(BA_WIRE_TERMINATE_DONE) { _ in }),
        ]
    }

    private static func serviceFrames() -> [(name: String, data: Data)] {
        let download = Download(
            identifier: "bonus", uniqueIdentifier: "BAURLDownload.group.com.example.levels.1",
            url: "https://assets.example.com/bonus.pack", applicationGroupIdentifier: "group.com.example.levels",
            fileSize: 3_145_728, isEssential: false, sha256: String(repeating: "ab", count: 32),
            httpHeaders: ["X-Token: 1"])
        let messages: [(String, ClientMessage)] = [
            ("hello", .request(id: 1, .hello(Hello(role: .app, appIdentifier: "com.example.levels")))),
            ("schedule", .request(id: 2, .schedule(download))),
            ("foreground", .request(id: 3, .startForeground(download))),
            ("cancel", .request(id: 4, .cancel(download))),
            ("fetch", .request(id: 5, .currentDownloads)),
            ("delegate", .request(id: 6, .setDelegate(true))),
            ("ensure-pack", .request(id: 7, .ensureAssetPack("intro", requireLatestVersion: true))),
            ("callback-reply", .callbackReply(id: 8, CallbackReply(handled: true, disposition: 0, user: "u", password: "p"))),
        ]
        let bare = Download(identifier: "b", url: nil, applicationGroupIdentifier: "group.com.example.levels", fileSize: 0)
        let replies: [(String, ServiceMessage)] = [
            ("reply-downloads", .reply(id: 5, .downloads([download, bare]))),
            ("reply-ok", .reply(id: 2, .ok)),
            ("event-began", .event(.began(download))),
            ("callback-finished", .callback(id: 9, .finished(download, filePath: "/data/containers/g/bonus"))),
        ]
        return messages.compactMap { name, message in (try? ServiceProtocol.encode(message)).map { (name, Data($0)) } }
            + replies.compactMap { name, message in (try? ServiceProtocol.encode(message)).map { (name, Data($0)) } }
    }

    private static func infoPlists() -> [(name: String, data: Data)] {
        let plist: [String: Any] = [
            "CFBundleIdentifier": "com.example.levels", "BAAppGroupID": "group.com.example.levels",
            "BAManifestURL": "https://assets.example.com/manifest.json",
            "BAInitialDownloadRestrictions": [
                "BADownloadAllowance": 16_777_216, "BAEssentialDownloadAllowance": 2_097_152,
                "BADownloadDomainAllowList": ["assets.example.com", "*.cdn.example.com"],
            ] as [String: Any],
            "BAMaxInstallSize": 16_777_216, "BAEssentialMaxInstallSize": 2_097_152, "BAHasManagedAssetPacks": false,
            "BAHostExtension": "libLevels.so",
        ]
        return (try? PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)).map { [("xml", $0)] } ?? []
    }

    /// A real pack, made by `bahost pack package`'s code from two files; `body` gets its path while it exists.
    private static func withPack<T>(_ body: (String) -> T?) -> T? {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bahost-fuzz-seed-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let content = folder.appendingPathComponent("intro")
        try? FileManager.default.createDirectory(at: content, withIntermediateDirectories: true)
        try? Data("Welcome\n".utf8).write(to: content.appendingPathComponent("readme.txt"))
        try? Data(count: 300).write(to: content.appendingPathComponent("level.bin"))
        let manifest = folder.appendingPathComponent("Manifest.json")
        try? Data(#"{"assetPackID": "intro", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "intro"}]}"#.utf8)
            .write(to: manifest)
        let output = folder.appendingPathComponent("intro.tar.zst").path
        guard (try? PackArchive.package(manifestPath: manifest.path, output: output)) != nil else { return nil }
        return body(output)
    }

    private static func packArchives() -> [(name: String, data: Data)] {
        withPack { path in FileManager.default.contents(atPath: path).map { [("intro", $0)] } } ?? []
    }

    private static func downloadManifests() -> [(name: String, data: Data)] {
        withPack { path in
            (try? DownloadManifest.create(archives: [path], baseURL: "https://localhost:8443/", previous: nil).encoded())
                .map { [("intro", $0)] }
        } ?? []
    }
}
