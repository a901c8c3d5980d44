import Foundation
import PackAuthoring
import Packs
import Testing
import TestSupport

/// A managed app (`BAHasManagedAssetPacks`) against a real daemon, its packs self-hosted on nginx.
@Suite(.ownThreads) struct ManagedPacksTests {
    let nginx = Nginx.shared
    let dir = "managed-\(UUID().uuidString.prefix(8))"
    let work = TestPlugins.scratch.appendingPathComponent("managed-\(UUID().uuidString.prefix(8))")

    /// Packages a pack whose file `ID/readme.txt` (and `ID/N.txt` for each of `extraFiles`) holds `text`, and returns
    /// its archive.
    func pack(_ id: String, policy: String, text: String, extraFiles: Int = 0) throws -> String {
        let source = work.appendingPathComponent("\(id)-\(UUID().uuidString.prefix(4))")
        try FileManager.default.createDirectory(at: source.appendingPathComponent(id), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: source.appendingPathComponent("\(id)/readme.txt"))
        for number in 0..<extraFiles { try Data(text.utf8).write(to: source.appendingPathComponent("\(id)/\(number).txt")) }
        try Data("{\"assetPackID\":\"\(id)\",\"downloadPolicy\":\(policy),\"fileSelectors\":[{\"directory\":\"\(id)\"}]}".utf8)
            .write(to: source.appendingPathComponent("Manifest.json"))
        let archive = source.appendingPathComponent("\(id).tar.zst").path
        try PackArchive.package(manifestPath: source.appendingPathComponent("Manifest.json").path, output: archive)
        return archive
    }

    /// Puts the archives and their download manifest on nginx, as a developer self-hosting them would.
    /// `slow` serves the archives at nginx's 1 MB/s; `fileObjects` serves each file alone too, for updates.
    @discardableResult
    func publish(
        _ archives: [String], previous: DownloadManifest? = nil, slow: Bool = false, fileObjects: Bool = false
    ) throws -> DownloadManifest {
        let folder = slow ? "slow/\(dir)/packs" : "\(dir)/packs"
        let manifest = try DownloadManifest.create(
            archives: archives, baseURL: nginx.https(folder), previous: previous,
            fileObjects: fileObjects ? nginx.root.appendingPathComponent(folder) : nil)
        for archive in archives {
            let id = try PackArchive.readIndex(archive).manifest.assetPackID
            _ = try nginx.serve(try Data(contentsOf: URL(fileURLWithPath: archive)), at: "\(folder)/\(id)")
        }
        _ = try nginx.serve(try manifest.encoded(), at: "\(dir)/download-manifest.json")
        return manifest
    }

    func installedText(_ app: TestApp, _ daemon: ServiceDaemon, _ id: String) -> String? {
        let file = app.container(in: daemon.dataRoot)
            .appendingPathComponent("Library/Application Support/BackgroundAssets/AssetPacks/\(id)/\(id)/readme.txt")
        return FileManager.default.contents(atPath: file.path).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func installDownloadsEssentialPacksBeforeItReturnsAndUpdatesSwapInNewVersions() throws {
        let essential = try pack("intro", policy: #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#, text: "v1")
        let prefetch = try pack("level-2", policy: #"{"prefetch":{"installationEventTypes":["firstInstallation"]}}"#, text: "two")
        let onDemand = try pack("bonus", policy: #"{"onDemand":{}}"#, text: "bonus")
        let first = try publish([essential, prefetch, onDemand])
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/download-manifest.json"), plugin: TestPlugins.swiftExample,
            managedAssetPacks: true)
        let daemon = try ServiceDaemon()

        // Install returns once the essential pack is installed; the prefetch pack follows; the on-demand one waits.
        let install = try daemon.report(["install", app.folder.path])
        #expect(install.status == 0, "\(install.report)")
        #expect(install.report["assetPacksOffered"] as? Int == 3 && install.report["assetPacksQueued"] as? Int == 2)
        #expect(installedText(app, daemon, "intro") == "v1")
        #expect(
            ServiceDaemon.waitUntil { installedText(app, daemon, "level-2") == "two" },
            "\((try? daemon.bahost(["debug", "downloads", "--app", app.identifier]))?.stdout ?? "")")
        #expect(installedText(app, daemon, "bonus") == nil)
        #expect(install.events.contains { $0["event"] as? String == "packInstalled" && $0["assetPackID"] as? String == "intro" })

        let packs = try daemon.report(["debug", "packs", "--app", app.identifier])
        let rows = (packs.report["assetPacks"] as? [[String: Any]] ?? []).reduce(into: [String: [String: Any]]()) {
            $0[$1["assetPackID"] as? String ?? ""] = $1
        }
        #expect(rows["intro"]?["installedVersion"] as? Int == 1)
        #expect(rows["bonus"]?["installedVersion"] == nil && rows["bonus"]?["policy"] as? String == "on demand")

        // A new version of the essential pack on the server: the update request swaps it in whole.
        let second = try pack("intro", policy: #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#, text: "v2")
        try publish([second, prefetch, onDemand], previous: first)
        let update = try daemon.report(["update", app.folder.path])
        #expect(update.status == 0, "\(update.report)")
        #expect(ServiceDaemon.waitUntil { installedText(app, daemon, "intro") == "v2" })
        let after = try daemon.report(["debug", "packs", "--app", app.identifier]).report["assetPacks"] as? [[String: Any]]
        #expect(after?.first { $0["assetPackID"] as? String == "intro" }?["installedVersion"] as? Int == 2)
    }

    @Test func anArchiveThatIsNotWhatTheManifestPromisedLeavesNothingInstalled() throws {
        let essential = try pack("intro", policy: #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#, text: "v1")
        try publish([essential])
        // The server now hands out another archive under the same name: its hash does not match.
        let other = try pack("intro", policy: #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#, text: "evil")
        _ = try nginx.serve(try Data(contentsOf: URL(fileURLWithPath: other)), at: "\(dir)/packs/intro")
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/download-manifest.json"), plugin: TestPlugins.swiftExample,
            managedAssetPacks: true)
        let daemon = try ServiceDaemon()
        let install = try daemon.report(["install", app.folder.path])
        #expect(install.status == 2)
        let failures = install.report["essentialFailures"] as? [[String: Any]] ?? []
        #expect(failures.map { $0["identifier"] as? String } == ["intro"])
        #expect(installedText(app, daemon, "intro") == nil)
    }

    /// SIGKILL at moments spread over a pack update: the pack on disk is always one whole version, the next start
    /// leaves nothing half-made behind, and the update completes.
    @Test func killedDuringAPackUpdateThePackIsAlwaysOneWholeVersion() throws {
        let policy = #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#
        let first = try publish([try pack("world", policy: policy, text: "v1", extraFiles: 400)])
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/download-manifest.json"), plugin: TestPlugins.swiftExample,
            managedAssetPacks: true)
        let daemon = try ServiceDaemon()
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        try publish([try pack("world", policy: policy, text: "v2", extraFiles: 400)], previous: first)

        let packs = app.container(in: daemon.dataRoot).appendingPathComponent(
            "Library/Application Support/BackgroundAssets/AssetPacks")
        /// The versions the installed files hold: one, when the pack is whole.
        func versions() -> Set<String> {
            let folder = packs.appendingPathComponent("world/world")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            return Set(names.compactMap { FileManager.default.contents(atPath: folder.appendingPathComponent($0).path) }
                .map { String(decoding: $0, as: UTF8.self) })
        }
        for delay in [0, 40, 80, 120, 200, 300] {
            let update = try Bahost.start(["update", app.folder.path, "--socket", daemon.socket])
            usleep(useconds_t(delay * 1000))
            daemon.stop(SIGKILL)
            update.process.waitUntilExit()
            let seen = versions()
            #expect(seen == ["v1"] || seen == ["v2"], "after a kill at \(delay) ms the pack holds \(seen)")
            let staging = packs.appendingPathComponent(".staging").path
            let leftBehind = Set((try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? [])
            try daemon.restart()
            // The restarted service may be installing again (under new names), but nothing the kill left survives.
            let now = Set((try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? [])
            #expect(leftBehind.isDisjoint(with: now), "\(leftBehind.intersection(now)) survived the restart")
        }
        // Whatever the kills interrupted, the update goes through.
        if versions() != ["v2"] { _ = try daemon.report(["update", app.folder.path]) }
        #expect(ServiceDaemon.waitUntil { versions() == ["v2"] })
        let files = try FileManager.default.contentsOfDirectory(atPath: packs.appendingPathComponent("world/world").path)
        #expect(files.count == 401)
    }

    /// The managed example app, `packs-app`, written as on Apple against `AssetPackManager`.
    @Test(arguments: PacksApp.all) func theAppReadsDownloadsAndRemovesPacksThroughAssetPackManager(packsApp program: PacksApp) throws {
        let packsApp = try program.path
        let essential = try pack("intro", policy: #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#, text: "hello")
        let onDemand = try pack("bonus", policy: #"{"onDemand":{}}"#, text: "bonus level")
        let first = try publish([essential, onDemand])
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/download-manifest.json"), plugin: TestPlugins.swiftExample,
            managedAssetPacks: true)
        let daemon = try ServiceDaemon()
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        #expect(try daemon.report(["launch", app.identifier]).status == 0)

        let run = try daemon.launch(app.identifier, packsApp, [
                "--list", "--status", "intro", "--status", "bonus", "--read", "intro/readme.txt",
                "--ensure", "bonus", "--ensure", "nope", "--read", "bonus:bonus/readme.txt",
                "--read", "bonus:intro/readme.txt", "--read", "../etc/passwd", "--remove", "bonus",
            ])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.events()
        func line(_ key: String, _ value: String) -> [String: Any]? {
            lines.first { $0[key] as? String == value }
        }
        let packs = (lines.first?["packs"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
        #expect(packs == ["bonus", "intro"])
        // intro: offered, up to date, on the device (Apple's 69); bonus: only offered.
        #expect(line("status", "intro")?["raw"] as? Int == 69)
        #expect(line("status", "intro")?["description"] as? String == "[downloadAvailable, upToDate, downloaded]")
        #expect(line("status", "bonus")?["raw"] as? Int == 1)
        let reads = lines.filter { $0["read"] != nil }
        // The app reads after it ensured: bonus is there, in its own pack only; nothing leaves the namespace.
        #expect(reads.map { ($0["text"] as? String) ?? ($0["error"] as? String) ?? "" } == [
            "hello", "bonus level", "fileNotFound(intro/readme.txt)", "fileNotFound(../etc/passwd)",
        ])
        let ensured = line("ensured", "bonus")
        #expect(ensured?["available"] as? Bool == true)
        #expect((ensured?["updates"] as? [String])?.last == "finished", "\(ensured ?? [:])")
        #expect((ensured?["updates"] as? [String])?.first == "began", "\(ensured ?? [:])")
        #expect(line("ensured", "nope")?["error"] as? String == "assetPackNotFound(nope)")
        #expect(line("removed", "bonus")?["available"] as? Bool == false)
        let gone = try daemon.launch(app.identifier, packsApp, ["--read", "bonus/readme.txt"])
        #expect(gone.events().first?["error"] as? String == "fileNotFound(bonus/readme.txt)", "\(gone.stdout)")

        // The server drops bonus and ships a new intro: checkForUpdates updates one and removes the other.
        let next = try pack("intro", policy: #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#, text: "hello again")
        try publish([next], previous: first)
        let check = try daemon.launch(app.identifier, packsApp, ["--check-for-updates"])
        #expect(check.events().first?["updating"] as? [String] == ["intro"], "\(check.stdout) \(check.stderr)")
        #expect(ServiceDaemon.waitUntil { installedText(app, daemon, "intro") == "hello again" })
        let ensure = try daemon.launch(app.identifier, packsApp, ["--ensure", "bonus"])
        #expect(ensure.events().first?["error"] as? String == "assetPackNotFound(bonus)", "\(ensure.stdout)")
    }

    /// The extension's `shouldDownload(_:)` (a C extension on ABI 1.1) vetoes a pack; the others download.
    @Test func theExtensionMayVetoAPack() throws {
        let policy = #"{"prefetch":{"installationEventTypes":["firstInstallation"]}}"#
        try publish([try pack("keep-1", policy: policy, text: "kept"), try pack("skip-1", policy: policy, text: "skipped")])
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/download-manifest.json"), plugin: try TestPlugins.c("probes/managed_veto"),
            managedAssetPacks: true)
        let daemon = try ServiceDaemon()
        let install = try daemon.report(["install", app.folder.path])
        #expect(install.status == 0, "\(install.report)")
        #expect(install.report["assetPacksQueued"] as? Int == 1)
        #expect(install.events.contains { $0["event"] as? String == "packVetoed" && $0["assetPackID"] as? String == "skip-1" })
        #expect(ServiceDaemon.waitUntil { installedText(app, daemon, "keep-1") == "kept" })
        #expect(installedText(app, daemon, "skip-1") == nil)
        #expect(daemon.logText.contains("asked about skip-1 version 1"), "\(daemon.logText)")
    }

    /// A developer tries packs from `bahost serve` on an installed app with `bahost debug url-override`.
    @Test func urlOverrideFetchesFromBahostServe() throws {
        let policy = #"{"essential":{"installationEventTypes":["firstInstallation","subsequentUpdate"]}}"#
        let archive = try pack("local-1", policy: policy, text: "served locally")
        let certificates = URL(fileURLWithPath: nginx.caFile).deletingLastPathComponent()
        let serve = try Bahost.start([
            "serve", "--host", "localhost", "--port", "0", "--cert", certificates.appendingPathComponent("server.pem").path,
            "--key", certificates.appendingPathComponent("server.key").path, "--json", archive,
        ])
        defer { serve.process.terminate() }
        var firstLine = Data()
        while !firstLine.contains(UInt8(ascii: "\n")) {
            let chunk = serve.out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            firstLine.append(chunk)
        }
        let served = try #require(JSONSerialization.jsonObject(with: firstLine) as? [String: Any])
        let manifestURL = try #require(served["manifestURL"] as? String)

        // The app's own BAManifestURL has nothing yet.
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/not-yet.json"), plugin: TestPlugins.swiftExample,
            managedAssetPacks: true)
        let daemon = try ServiceDaemon()
        #expect(try daemon.report(["install", app.folder.path]).status == 2)
        let override = try daemon.report(["debug", "url-override", "--app", app.identifier, manifestURL])
        #expect(override.status == 0, "\(override.report)")
        let update = try daemon.report(["update", app.folder.path])
        #expect(update.status == 0, "\(update.report)")
        #expect(installedText(app, daemon, "local-1") == "served locally")
        #expect(try daemon.report(["debug", "url-override", "--app", app.identifier, "--clear"]).status == 0)
    }

    /// `progress.cancel()` stops a pack's download every time (Apple's 26.0 failed the second), and leaves nothing.
    @Test(arguments: PacksApp.all) func progressCancelStopsAPackDownloadEveryTime(packsApp program: PacksApp) throws {
        let packsApp = try program.path
        try publish([try TestPacks.randomBlob("big", size: 3_000_000, in: work.appendingPathComponent("big"))], slow: true)
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/download-manifest.json"), plugin: TestPlugins.swiftExample,
            managedAssetPacks: true)
        let daemon = try ServiceDaemon()
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        let run = try daemon.launch(app.identifier, packsApp, ["--cancel", "big", "--cancel", "big"])
        let attempts = run.events().filter { $0["cancelled"] as? String == "big" }
        #expect(attempts.count == 2, "\(run.stdout) \(run.stderr)")
        for attempt in attempts {
            #expect(attempt["error"] as? String != "none", "\(attempt)")
            #expect((attempt["updates"] as? [String])?.suffix(2) == ["downloading", "failed"], "\(attempt)")
            #expect(attempt["available"] as? Bool == false)
        }
    }

    /// Beyond Apple: an update fetches only the files that changed, and the pack's download size says so.
    @Test func anUpdateFetchesOnlyTheFilesThatChanged() throws {
        func world(_ readme: String) throws -> String {
            let source = work.appendingPathComponent("world-\(UUID().uuidString.prefix(4))")
            try FileManager.default.createDirectory(at: source.appendingPathComponent("world"), withIntermediateDirectories: true)
            for number in 0..<30 {
                try Data(String(repeating: "level \(number) ", count: 2000).utf8)
                    .write(to: source.appendingPathComponent("world/\(number).txt"))
            }
            try Data(readme.utf8).write(to: source.appendingPathComponent("world/readme.txt"))
            try Data(#"{"assetPackID":"world","downloadPolicy":{"essential":{"installationEventTypes":["firstInstallation"]}},"fileSelectors":[{"directory":"world"}]}"#.utf8)
                .write(to: source.appendingPathComponent("Manifest.json"))
            let archive = source.appendingPathComponent("world.tar.zst").path
            try PackArchive.package(manifestPath: source.appendingPathComponent("Manifest.json").path, output: archive)
            return archive
        }
        let first = try publish([try world("v1")], fileObjects: true)
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/download-manifest.json"), plugin: TestPlugins.swiftExample,
            managedAssetPacks: true)
        let daemon = try ServiceDaemon()
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        let archiveRequests = try nginx.requests(for: "\(dir)/packs/world").count

        let second = try publish([try world("v2")], previous: first, fileObjects: true)
        let entry = try #require(second.assetPacks.first)
        let readme = try #require(entry.files.first { $0.path == "world/readme.txt" })
        // The periodic request finds version 2 and queues the one file that changed: 2 bytes, not the archive.
        let periodic = try daemon.report(["debug", "simulate", "--app", app.identifier, "--event", "periodic"])
        let queued = periodic.events.filter { $0["event"] as? String == "queued" }
        #expect(queued.map { $0["fileSize"] as? Int } == [Int(readme.size)], "\(periodic.events)")
        #expect(ServiceDaemon.waitUntil { installedText(app, daemon, "world") == "v2" })
        // One file object fetched; the archive not again; the other 30 files kept.
        #expect(try nginx.requests(for: "\(dir)/packs/world").count == archiveRequests)
        #expect(try nginx.requests(for: "\(dir)/packs/world.files/\(readme.sha256)").count == 1)
        let folder = app.container(in: daemon.dataRoot)
            .appendingPathComponent("Library/Application Support/BackgroundAssets/AssetPacks/world/world")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).count == 31)
    }

    /// The life cycle with the tools a developer uses: `bahost pack package`, `bahost serve` over HTTPS with the
    /// test CA, `bahost debug url-override`, the managed example extension, and the managed example app.
    @Test func theWholeLifeCycleWithTheTools() throws {
        /// Packages a pack with `bahost pack package` (one file, `ID/readme.txt`).
        func packWithTheTool(_ id: String, _ policy: String, _ text: String) throws -> String {
            let source = work.appendingPathComponent("\(id)-\(UUID().uuidString.prefix(4))")
            try FileManager.default.createDirectory(at: source.appendingPathComponent(id), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: source.appendingPathComponent("\(id)/readme.txt"))
            try Data("{\"assetPackID\":\"\(id)\",\"downloadPolicy\":\(policy),\"fileSelectors\":[{\"directory\":\"\(id)\"}]}".utf8)
                .write(to: source.appendingPathComponent("Manifest.json"))
            let archive = source.appendingPathComponent("\(id).tar.zst").path
            let packed = try Bahost.run(["pack", "package", source.appendingPathComponent("Manifest.json").path, "-o", archive])
            #expect(packed.status == 0, "\(packed.stderr)")
            return archive
        }
        let certificates = URL(fileURLWithPath: nginx.caFile).deletingLastPathComponent()
        var serving: (process: Process, out: Pipe, err: Pipe)?
        defer { serving?.process.terminate() }
        /// Starts `bahost serve` (on `port`, or any); returns its download manifest URL.
        func serve(_ archives: [String], port: Int) throws -> String {
            serving?.process.terminate()
            serving?.process.waitUntilExit()
            let started = try Bahost.start([
                "serve", "--host", "localhost", "--port", "\(port)",
                "--cert", certificates.appendingPathComponent("server.pem").path,
                "--key", certificates.appendingPathComponent("server.key").path, "--json",
            ] + archives)
            serving = started
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let chunk = started.out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                line.append(chunk)
            }
            let object = try #require(JSONSerialization.jsonObject(with: line) as? [String: Any])
            return try #require(object["manifestURL"] as? String)
        }
        let essential = #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#
        let onDemand = #"{"onDemand":{}}"#
        let extra = try packWithTheTool("extra", onDemand, "extra")
        let bonus = try packWithTheTool("bonus", onDemand, "bonus")
        let manifestURL = try serve([try packWithTheTool("intro", essential, "welcome"), bonus, extra], port: 0)
        let port = try #require(URLComponents(string: manifestURL)?.port)

        // Installed from bahost serve through the override, with the managed example extension.
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/not-yet.json"),
            plugin: TestPlugins.buildFolder.appendingPathComponent("libManagedExampleExtension.so").path,
            managedAssetPacks: true)
        let daemon = try ServiceDaemon()
        _ = try daemon.report(["install", app.folder.path])
        #expect(try daemon.report(["debug", "url-override", manifestURL]).status == 0)
        let update = try daemon.report(["debug", "simulate", "--app", app.identifier, "--event", "install"])
        #expect(update.status == 0, "\(update.report)")
        #expect(daemon.logText.contains("shouldDownload intro version 1: yes"))
        #expect(try daemon.report(["launch", app.identifier]).status == 0)

        let packsApp = TestPlugins.buildFolder.appendingPathComponent("packs-app").path
        let first = try daemon.launch(app.identifier, packsApp, ["--read", "intro/readme.txt", "--ensure", "bonus", "--ensure", "extra", "--ensure", "nope",
             "--read", "bonus/readme.txt", "--read", "missing.txt", "--remove", "extra"])
        let lines = first.events()
        let reads = lines.filter { $0["read"] != nil }.map { ($0["text"] as? String) ?? ($0["error"] as? String) ?? "" }
        #expect(reads == ["welcome", "bonus", "fileNotFound(missing.txt)"], "\(first.stdout) \(first.stderr)")
        let bonusUpdates = lines.first { $0["ensured"] as? String == "bonus" }?["updates"] as? [String]
        #expect(bonusUpdates?.first == "began" && bonusUpdates?.last == "finished", "\(bonusUpdates ?? [])")
        #expect(lines.first { $0["ensured"] as? String == "nope" }?["error"] as? String == "assetPackNotFound(nope)")
        #expect(lines.first { $0["removed"] as? String == "extra" }?["available"] as? Bool == false)

        // The server moves on: intro changes, bonus is gone. checkForUpdates updates one and removes the other.
        _ = try serve([try packWithTheTool("intro", essential, "welcome back"), extra], port: port)
        let check = try daemon.launch(app.identifier, packsApp, ["--check-for-updates"])
        #expect(check.events().first?["updating"] as? [String] == ["intro"], "\(check.stdout) \(check.stderr)")
        #expect(check.events().first?["removed"] as? [String] == ["bonus"], "\(check.stdout)")
        #expect(ServiceDaemon.waitUntil { installedText(app, daemon, "intro") == "welcome back" })
        let after = try daemon.launch(app.identifier, packsApp, ["--read", "bonus/readme.txt"])
        #expect(after.events().first?["error"] as? String == "fileNotFound(bonus/readme.txt)")
    }

    /// `url(for:)` of a folder two packs hold gives one folder with both packs' files.
    @Test(arguments: PacksApp.all) func aFolderSeveralPacksHoldIsMerged(packsApp program: PacksApp) throws {
        let packsApp = try program.path
        func levels(_ id: String, _ name: String) throws -> String {
            let source = work.appendingPathComponent(id)
            try FileManager.default.createDirectory(at: source.appendingPathComponent("levels/\(id)"), withIntermediateDirectories: true)
            try Data(id.utf8).write(to: source.appendingPathComponent("levels/\(name).txt"))
            try Data(id.utf8).write(to: source.appendingPathComponent("levels/\(id)/inside.txt"))
            try Data("{\"assetPackID\":\"\(id)\",\"downloadPolicy\":{\"essential\":{\"installationEventTypes\":[\"firstInstallation\"]}},\"fileSelectors\":[{\"directory\":\"levels\"}]}".utf8)
                .write(to: source.appendingPathComponent("Manifest.json"))
            let archive = source.appendingPathComponent("\(id).tar.zst").path
            try PackArchive.package(manifestPath: source.appendingPathComponent("Manifest.json").path, output: archive)
            return archive
        }
        try publish([try levels("first", "one"), try levels("second", "two")])
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/download-manifest.json"), plugin: TestPlugins.swiftExample,
            managedAssetPacks: true)
        let daemon = try ServiceDaemon()
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        let run = try daemon.launch(app.identifier, packsApp, ["--list-folder", "levels", "--list-folder", "levels/second", "--read", "levels/two.txt"])
        let lines = run.events()
        func names(_ folder: String) -> [String]? {
            lines.first { $0["folder"] as? String == folder }?["names"] as? [String]
        }
        #expect(names("levels") == ["first", "one.txt", "second", "two.txt"], "\(run.stdout) \(run.stderr)")
        #expect(names("levels/second") == ["inside.txt"])
        #expect(lines.first { $0["read"] != nil }?["text"] as? String == "second")
    }

    // MARK: Localized packs (27)

    /// A localized pack whose `voice/hello.txt` holds `text`, packed from `LANGUAGE/voice` with a directory source.
    func localizedPack(_ id: String, language: String, text: String) throws -> String {
        let source = work.appendingPathComponent("\(id)-\(UUID().uuidString.prefix(4))")
        try FileManager.default.createDirectory(
            at: source.appendingPathComponent("assets/\(language)/voice"), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: source.appendingPathComponent("assets/\(language)/voice/hello.txt"))
        try Data("""
            {"assetPackID": "\(id)", "language": "\(language)", "sourceRoot": "assets",
             "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation"]}},
             "fileSelectors": [{"directorySource": "\(language)/voice", "directoryDestination": "voice"}]}
            """.utf8).write(to: source.appendingPathComponent("Manifest.json"))
        let archive = source.appendingPathComponent("\(id).tar.zst").path
        try PackArchive.package(manifestPath: source.appendingPathComponent("Manifest.json").path, output: archive)
        return archive
    }

    /// Install downloads the localized packs of the user's language only (the service's LANGUAGE, English); the app
    /// reads them as localized; reconciling with the app's own languages (French) brings the French pack and removes
    /// the English one; a language the app sets wins over its user's, and clearing it goes back to them.
    @Test(arguments: PacksApp.all) func localizedPacksFollowTheResolvedLanguage(packsApp program: PacksApp) throws {
        let intro = try pack("intro", policy: #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#, text: "hi")
        let french = try localizedPack("voice-fr", language: "fr", text: "bonjour")
        let english = try localizedPack("voice-en", language: "en", text: "hello")
        let manifest = try DownloadManifest.create(
            archives: [intro, french, english], baseURL: nginx.https("\(dir)/packs"), previous: nil, primaryLanguage: "en")
        for archive in [intro, french, english] {
            let id = try PackArchive.readIndex(archive).manifest.assetPackID
            _ = try nginx.serve(try Data(contentsOf: URL(fileURLWithPath: archive)), at: "\(dir)/packs/\(id)")
        }
        _ = try nginx.serve(try manifest.encoded(), at: "\(dir)/download-manifest.json")
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/download-manifest.json"), plugin: TestPlugins.swiftExample,
            managedAssetPacks: true)
        let daemon = try ServiceDaemon(environment: ["LANGUAGE": "en-GB:de", "LANG": "C.UTF-8"])
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        let packs = app.container(in: daemon.dataRoot).appendingPathComponent("Library/Application Support/BackgroundAssets/AssetPacks")
        func installed() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: packs.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        }
        #expect(installed() == ["intro", "voice-en"])

        let packsApp = try program.path
        /// packs-app run as the app by a user who prefers French.
        func run(_ arguments: [String]) throws -> [[String: Any]] {
            let result = try daemon.launch(app.identifier, packsApp, arguments, environment: ["LANGUAGE": "fr-CA:fr"])
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            return result.events()
        }
        func line(_ lines: [[String: Any]], _ key: String, _ value: String? = nil) -> [String: Any]? {
            lines.first { $0[key] != nil && (value == nil || $0[key] as? String == value) }
        }
        var lines = try run(["--languages", "--read-localized", "en:voice/hello.txt", "--read-localized", "fr:voice/hello.txt"])
        let languages = try #require(line(lines, "primaryLanguage"))
        #expect(languages["primaryLanguage"] as? String == "en")
        #expect(languages["resolvedLanguage"] as? String == "en")
        #expect(languages["availableLanguages"] as? [String] == ["en", "fr"])
        #expect(languages["locallyAvailableLanguages"] as? [String] == ["en"])
        #expect(line(lines, "readLocalized", "en:voice/hello.txt")?["text"] as? String == "hello")
        #expect(line(lines, "readLocalized", "fr:voice/hello.txt")?["error"] as? String == "fileNotFound(voice/hello.txt)")

        // Reconciling with the app's languages: French comes, English goes; fr-CA reads the fr pack.
        lines = try run(["--reconcile", "--languages", "--read-localized", "fr-CA:voice/hello.txt"])
        #expect(line(lines, "reconciled")?["reconciled"] as? Bool == true, "\(lines)")
        #expect(line(lines, "primaryLanguage")?["resolvedLanguageID"] as? String == "fr")
        #expect(line(lines, "primaryLanguage")?["locallyAvailableLanguages"] as? [String] == ["fr"])
        #expect(line(lines, "readLocalized")?["text"] as? String == "bonjour")
        #expect(installed() == ["intro", "voice-fr"])

        // A language the app sets wins over its user's.
        lines = try run(["--set-language", "en", "--reconcile", "--languages"])
        #expect(line(lines, "primaryLanguage")?["resolvedLanguageID"] as? String == "en")
        #expect(installed() == ["intro", "voice-en"])

        // Cleared, the user's languages apply again.
        lines = try run(["--set-language", "none", "--reconcile", "--languages"])
        #expect(line(lines, "primaryLanguage")?["resolvedLanguageID"] as? String == "fr")
        #expect(installed() == ["intro", "voice-fr"])
    }
}
