import Foundation
import Testing
import TestSupport

/// `bahost run` and `bahost resume` end to end: real nginx, real extension processes, real files landing.
@Suite(.ownThreads) struct LifecycleTests {
    let nginx = Nginx.shared

    /// An app: its Info.plist and a data root of its own.
    struct App {
        let infoPlist: String
        let dataRoot: URL
        var container: URL { dataRoot.appendingPathComponent("containers/group.com.example.levels") }

        init(manifestURL: String, allowList: [String], allowance: Int64 = 100_000_000, dataRoot: URL? = nil) throws {
            self.dataRoot = dataRoot ?? TestPlugins.scratch.appendingPathComponent("data-\(UUID().uuidString)")
            let values: [String: Any] = [
                "CFBundleIdentifier": "com.example.levels", "BAAppGroupID": "group.com.example.levels",
                "BAManifestURL": manifestURL,
                "BAInitialDownloadRestrictions": [
                    "BADownloadAllowance": allowance, "BAEssentialDownloadAllowance": allowance,
                    "BADownloadDomainAllowList": allowList,
                ] as [String: Any],
                "BAMaxInstallSize": allowance,
            ]
            let data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
            infoPlist = TestPlugins.scratch.appendingPathComponent("\(UUID().uuidString)-Info.plist").path
            try data.write(to: URL(fileURLWithPath: infoPlist))
        }

        func leftovers() -> [String] {
            let folders = ["transfers", "containers/group.com.example.levels/Library/Caches/BackgroundAssets"]
            return folders.flatMap { folder in
                ((try? FileManager.default.contentsOfDirectory(atPath: dataRoot.appendingPathComponent(folder).path)) ?? [])
                    .filter { !$0.hasPrefix("manifest") }
            }
        }
    }

    func run(_ plugin: String, _ app: App, event: String = "install", _ extra: [String] = []) throws -> Bahost.Result {
        try Bahost.run(
            ["run", "--plugin", plugin, "--event", event, "--info-plist", app.infoPlist, "--data-root", app.dataRoot.path,
             "--retry-delay", "0.05", "--json"] + extra)
    }

    /// An asset of `size` random bytes served in a folder of its own, and an app whose manifest is its one line
    /// "URL SIZE" (the probes' format).
    func appWithOneAsset(_ name: String, size: Int, dataRoot: URL? = nil) throws -> (App, Data) {
        let dir = "\(name)-\(UUID().uuidString)"
        let body = Data.random(count: size)
        try nginx.serve(body, at: "\(dir)/asset.pack")
        try nginx.serve(Data("\(nginx.http("\(dir)/asset.pack")) \(body.count)\n".utf8), at: "\(dir)/manifest.txt")
        return (try App(manifestURL: nginx.http("\(dir)/manifest.txt"), allowList: ["127.0.0.1"], dataRoot: dataRoot), body)
    }

    /// `count` files of 8 to 16 KiB of random bytes, served in a folder of its own (`dir`), and an app whose manifest
    /// lists them as `f0`, `f1`, … (the example extension's format).
    func appWithSmallFiles(_ name: String, count: Int) throws -> (dir: String, files: [Data], app: App) {
        let dir = "\(name)-\(UUID().uuidString)"
        let files = (0..<count).map { _ in Data.random(count: 8192 + Int.random(in: 0..<8192)) }
        for (index, data) in files.enumerated() { try nginx.serve(data, at: "\(dir)/f\(index)") }
        let manifest = files.enumerated().map { index, data in "f\(index) \(data.count) optional \(nginx.http("\(dir)/f\(index)"))" }
        try nginx.serve(Data(manifest.joined(separator: "\n").utf8), at: "\(dir)/manifest.txt")
        return (dir, files, try App(manifestURL: nginx.http("\(dir)/manifest.txt"), allowList: ["127.0.0.1"]))
    }

    func names(_ result: Bahost.Result) -> [String] {
        result.events().map { event in
            let name = event["event"] as? String ?? "?"
            return (event["identifier"] as? String).map { "\(name) \($0)" } ?? name
        }
    }

    @Test func wholeLifeCycleOverTLSWithTheCAOption() throws {
        let dir = "life-\(UUID().uuidString)"
        let (one, two) = (Data.random(count: 1_500_000), Data.random(count: 2_500_000))
        try nginx.serve(one, at: "\(dir)/level-1.pack")
        try nginx.serve(two, at: "\(dir)/level-2.pack")
        let manifest = """
            level-1 \(one.count) essential \(nginx.https("\(dir)/level-1.pack"))
            level-2 \(two.count) optional \(nginx.https("\(dir)/level-2.pack"))
            """
        try nginx.serve(Data(manifest.utf8), at: "\(dir)/manifest.txt")
        let app = try App(manifestURL: nginx.https("\(dir)/manifest.txt"), allowList: ["localhost"])

        let result = try run(try TestPlugins.c("example_extension"), app, ["--ca-file", nginx.caFile])
        #expect(result.status == 0, "\(result.stderr)")
        let order = names(result)
        #expect(order.first == "manifest" && order.last == "summary")
        // Essential first: level-2 begins only once level-1 finished, and the app may launch between them.
        let finishedOne = try #require(order.firstIndex(of: "finished level-1"))
        let launch = try #require(order.firstIndex(of: "appMayLaunch"))
        let beganTwo = try #require(order.firstIndex(of: "began level-2"))
        #expect(finishedOne < launch && launch < beganTwo)
        #expect(order.filter { $0.hasPrefix("delivered") }.sorted() == ["delivered level-1", "delivered level-2"])
        // Each file landed whole, where the extension moved it, and nothing was left behind.
        #expect(FileManager.default.contents(atPath: app.container.appendingPathComponent("Assets/level-1").path) == one)
        #expect(FileManager.default.contents(atPath: app.container.appendingPathComponent("Assets/level-2").path) == two)
        #expect(app.leftovers().isEmpty)
        // Without the CA, the manifest's server is not trusted. The HTTP client keeps trying to connect for the whole
        // connect timeout (10 s by default) before it gives the handshake's failure; a second is enough to see it.
        let other = try App(manifestURL: nginx.https("\(dir)/manifest.txt"), allowList: ["localhost"])
        let untrusted = try run(try TestPlugins.c("example_extension"), other, ["--connect-timeout", "1"])
        #expect(untrusted.status == 9)
        #expect((untrusted.events("manifestFailed").first?["error"] as? [String: Any])?["code"] as? Int == -1202)
    }

    @Test func policyRefusalsHappenBeforeAByteAndReachTheExtension() throws {
        let dir = "policy-\(UUID().uuidString)"
        try nginx.serve(Data.random(count: 1000), at: "\(dir)/ok.pack")
        let manifest = """
            ok 1000 optional \(nginx.http("\(dir)/ok.pack"))
            elsewhere 1000 optional https://assets.elsewhere.example/x.pack
            huge 900000000 optional \(nginx.http("\(dir)/huge.pack"))
            """
        try nginx.serve(Data(manifest.utf8), at: "\(dir)/manifest.txt")
        let app = try App(manifestURL: nginx.http("\(dir)/manifest.txt"), allowList: ["127.0.0.1"], allowance: 1_000_000)

        let result = try run(try TestPlugins.c("example_extension"), app, ["--allow-insecure-loopback"])
        #expect(result.status == 2)
        let rejected = result.events("rejected").map { ($0["identifier"] as? String ?? "", ($0["error"] as? [String: Any])?["code"] as? Int) }
        #expect(rejected.map(\.0) == ["elsewhere", "huge"])
        #expect(rejected.map(\.1) == [202, 112])
        #expect(names(result).contains("finished ok"))
        // Nothing was requested for the refused downloads.
        #expect(try nginx.requests(for: "\(dir)/huge.pack").isEmpty)
        // The extension heard of each refusal in its completion window.
        let logs = result.events("window").flatMap { ($0["log"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String } }
        #expect(logs.contains { $0.hasPrefix("elsewhere failed: BAErrorDomain 202") })
        #expect(logs.contains { $0.hasPrefix("huge failed: BAErrorDomain 112") })
    }

    @Test func theManifestCountsAgainstTheAllowance() throws {
        let dir = "manifest-\(UUID().uuidString)"
        try nginx.serve(Data(String(repeating: "# padding\n", count: 100).utf8), at: "\(dir)/manifest.txt")
        for (allowance, code) in [(Int64(0), 203), (Int64(100), 204)] {
            let app = try App(manifestURL: nginx.http("\(dir)/manifest.txt"), allowList: ["127.0.0.1"], allowance: allowance)
            let result = try run(try TestPlugins.c("example_extension"), app, ["--allow-insecure-loopback"])
            #expect(result.status == 9, "allowance \(allowance)")
            #expect((result.events("manifestFailed").first?["error"] as? [String: Any])?["code"] as? Int == code)
            // Apple: a manifest failure reaches the extension's failedWithError, as a download that is no BAURLDownload.
            let logs = result.events("window").flatMap { ($0["log"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String } }
            #expect(logs.contains { $0.hasPrefix("BAManifestURL failed: BAErrorDomain \(code)") })
            #expect(!names(result).contains("window") || result.events("window").count == 1)
        }
    }

    /// Whatever the allowance, a manifest is fetched up to 64 MiB: once the app has launched nothing else limited it,
    /// and a server could fill the disk with one. Nothing of it is left behind.
    @Test func aManifestPastBahostsLimitIsRefusedWhateverTheAllowance() throws {
        let dir = "manifest-\(UUID().uuidString)"
        try nginx.serve(Data(count: (64 << 20) + 1), at: "\(dir)/manifest.txt")
        let app = try App(manifestURL: nginx.http("\(dir)/manifest.txt"), allowList: ["127.0.0.1"], allowance: 1 << 40)
        let result = try run(try TestPlugins.c("example_extension"), app, ["--allow-insecure-loopback"])
        #expect(result.status == 9)
        let error = result.events("manifestFailed").first?["error"] as? [String: Any]
        #expect(error?["message"] as? String == "the manifest is larger than 67108864 bytes, the most bahost fetches for one")
        let logs = result.events("window").flatMap { ($0["log"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String } }
        #expect(logs.contains { $0.hasPrefix("BAManifestURL failed: BAHostErrorDomain") }, "\(logs)")
        #expect(app.leftovers().isEmpty && (try? FileManager.default.contentsOfDirectory(
            atPath: app.dataRoot.appendingPathComponent("transfers").path))?.isEmpty != false)
    }

    /// Synchronous on purpose: it polls with usleep on its own thread, where an async sleep could wait for seconds
    /// behind other tests that block the cooperative pool, and miss the transfer.
    @Test func killedWithSIGKILLMidTransferTheHostResumesAndLosesNothing() throws {
        let dir = "slow/crash-\(UUID().uuidString)"
        let (one, two) = (Data.random(count: 1_600_000), Data.random(count: 1_200_000))
        try nginx.serve(one, at: "\(dir)/level-1.pack")
        try nginx.serve(two, at: "\(dir)/level-2.pack")
        let manifest = """
            level-1 \(one.count) essential \(nginx.http("\(dir)/level-1.pack"))
            level-2 \(two.count) optional \(nginx.http("\(dir)/level-2.pack"))
            """
        try nginx.serve(Data(manifest.utf8), at: "\(dir)/manifest.txt")
        let app = try App(manifestURL: nginx.http("\(dir)/manifest.txt"), allowList: ["127.0.0.1"])

        let running = try Bahost.start(
            ["run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install", "--info-plist", app.infoPlist,
             "--data-root", app.dataRoot.path, "--allow-insecure-loopback", "--json"])
        // Wait until level-1 is partly on disk, then kill the host outright.
        let transfers = app.dataRoot.appendingPathComponent("transfers")
        var partial: Int64 = 0
        for _ in 0..<400 {
            usleep(25_000)
            let parts = (try? FileManager.default.contentsOfDirectory(atPath: transfers.path).filter { $0.hasSuffix(".part") }) ?? []
            partial = parts.map { name -> Int64 in
                var info = stat()
                return stat(transfers.appendingPathComponent(name).path, &info) == 0 ? Int64(info.st_size) : 0
            }.max() ?? 0
            if partial >= 300_000 { break }
        }
        kill(running.process.processIdentifier, SIGKILL)
        running.process.waitUntilExit()
        let before = String(decoding: running.out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(running.process.terminationReason == .uncaughtSignal, "the run ended on its own:\n\(before)")
        #expect(partial >= 300_000 && partial < Int64(one.count))

        let resumed = try Bahost.run(["resume", "--data-root", app.dataRoot.path, "--retry-delay", "0.05", "--json"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(FileManager.default.contents(atPath: app.container.appendingPathComponent("Assets/level-1").path) == one)
        #expect(FileManager.default.contents(atPath: app.container.appendingPathComponent("Assets/level-2").path) == two)
        #expect(app.leftovers().isEmpty)
        // The interrupted file went on from where it stopped; no file was fetched whole twice.
        let requests = try nginx.requests(for: "\(dir)/level-1.pack")
        #expect(requests.contains { $0.contains(" 206 \"bytes=") })
        for file in ["level-1.pack", "level-2.pack"] {
            #expect(try nginx.requests(for: "\(dir)/\(file)").filter { $0.contains(" 200 ") }.count <= 1, "\(file)")
        }
        // Every completion reached the extension after the restart.
        #expect(Set(names(resumed).filter { $0.hasPrefix("delivered") }) == ["delivered level-1", "delivered level-2"])
    }

    /// Many small files moving at once when the host is killed: after the resume every file is in the container
    /// whole and exactly as served, none half-written, and no file the killed host had finished is fetched again.
    /// Synchronous for the same reason as the test above.
    @Test func killedWithSIGKILLAmongManySmallFilesNothingIsLostOrFetchedTwice() throws {
        let (dir, files, app) = try appWithSmallFiles("many", count: 300)

        let running = try Bahost.start(
            ["run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install",
             "--info-plist", app.infoPlist, "--data-root", app.dataRoot.path, "--allow-insecure-loopback",
             "--max-concurrent", "8", "--max-per-host", "8", "--json"])
        // Its event lines are read as they come: a pipe left unread would fill and hold the host up.
        let output = OutputCollector(running.out)
        // Kill it once some files have reached the extension, and while most have not.
        let kept = app.container.appendingPathComponent("Assets")
        for _ in 0..<800 {
            usleep(5_000)
            if ((try? FileManager.default.contentsOfDirectory(atPath: kept.path))?.count ?? 0) >= 10 { break }
        }
        kill(running.process.processIdentifier, SIGKILL)
        running.process.waitUntilExit()
        let before = output.text()
        #expect(running.process.terminationReason == .uncaughtSignal, "the run ended on its own")
        let finishedBefore = Set(before.split(separator: "\n").compactMap { line -> String? in
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                event["event"] as? String == "finished"
            else { return nil }
            return event["identifier"] as? String
        })
        #expect(!finishedBefore.isEmpty && finishedBefore.count < files.count, "killed after \(finishedBefore.count) files")

        let resumed = try Bahost.run(["resume", "--data-root", app.dataRoot.path, "--retry-delay", "0.05", "--json"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        for (index, data) in files.enumerated() {
            #expect(FileManager.default.contents(atPath: kept.appendingPathComponent("f\(index)").path) == data, "f\(index)")
        }
        #expect(app.leftovers().isEmpty)
        for identifier in finishedBefore {
            let whole = try nginx.requests(for: "\(dir)/\(identifier)").filter { $0.contains(" 200 ") }
            #expect(whole.count == 1, "\(identifier) was finished before the kill and fetched \(whole.count) times")
        }
    }

    /// Killed while it admits what a large content request returns (staged as the window receives it, queued only
    /// once the request returned): nothing of the request is queued, so the resumed host has nothing to fetch.
    /// Synchronous for the same reason as the tests above.
    @Test func killedWithSIGKILLWhileAdmittingAContentRequestNothingOfItIsQueued() throws {
        let dir = "admitting-\(UUID().uuidString)"
        let manifest = (0..<100_000).map { "d\($0) 1024 optional \(nginx.http("\(dir)/d\($0)"))" }
        try nginx.serve(Data(manifest.joined(separator: "\n").utf8), at: "\(dir)/manifest.txt")
        let app = try App(manifestURL: nginx.http("\(dir)/manifest.txt"), allowList: ["127.0.0.1"])

        let running = try Bahost.start(
            ["run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install",
             "--info-plist", app.infoPlist, "--data-root", app.dataRoot.path, "--allow-insecure-loopback", "--json"])
        let output = OutputCollector(running.out)
        // The manifest was served: the window is then sending its 100,000 downloads, which take the host seconds to
        // admit.
        for _ in 0..<400 where try nginx.requests(for: "\(dir)/manifest.txt").isEmpty { usleep(25_000) }
        usleep(300_000)
        kill(running.process.processIdentifier, SIGKILL)
        running.process.waitUntilExit()
        let before = output.text()
        #expect(before.contains(#""event":"manifest""#))
        #expect(!before.contains(#""event":"window""#), "the window had ended before the kill")

        let resumed = try Bahost.run(["resume", "--data-root", app.dataRoot.path, "--json"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(!names(resumed).contains { $0.hasPrefix("began") })
        let summary = try #require(resumed.events("summary").first)
        #expect(summary["finished"] as? Int == 0 && summary["failed"] as? Int == 0, "\(summary)")
    }

    /// `bahost run … | head -1`: the reader closes the pipe while the run goes on. The run ends as a Unix tool ends on
    /// SIGPIPE (it crashed in Foundation's `FileHandle.write` before), and `bahost resume` finishes every file.
    /// Synchronous: it reads the pipe as `head` does, blocking its own thread.
    @Test func aReaderThatClosesTheOutputEndsTheRunAsSIGPIPEAndResumeFinishesIt() throws {
        let (_, files, app) = try appWithSmallFiles("reader", count: 200)

        let running = try Bahost.start(
            ["run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install",
             "--info-plist", app.infoPlist, "--data-root", app.dataRoot.path, "--allow-insecure-loopback",
             "--max-concurrent", "2", "--json"])
        let errors = OutputCollector(running.err)
        // Read as `head` would, up to the first finished file, then close: whatever the run writes next (at the
        // latest its summary) finds no reader.
        let reader = running.out.fileHandleForReading
        var seen = Data()
        while !seen.contains(Data(#""event":"finished""#.utf8)) {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        try reader.close()
        running.process.waitUntilExit()
        #expect(running.process.terminationReason == .uncaughtSignal && running.process.terminationStatus == SIGPIPE,
            "ended with \(running.process.terminationReason == .exit ? "status" : "signal") \(running.process.terminationStatus)")
        #expect(!errors.text().contains("Fatal error"), "\(errors.text().prefix(300))")

        let resumed = try Bahost.run(["resume", "--data-root", app.dataRoot.path, "--retry-delay", "0.05", "--json"])
        #expect(resumed.status == 0, "\(resumed.stderr)")
        let kept = app.container.appendingPathComponent("Assets")
        for (index, data) in files.enumerated() {
            #expect(FileManager.default.contents(atPath: kept.appendingPathComponent("f\(index)").path) == data, "f\(index)")
        }
        #expect(app.leftovers().isEmpty)
    }

    /// An output that cannot be written for another reason (here a full device): the run ends with 74 at its first
    /// line (the content request's window, before its downloads are queued) and says why on standard error; it
    /// leaves nothing behind, and the same run with an output that works then fetches the file.
    @Test func anOutputThatCannotBeWrittenEndsTheRunWith74AndSaysWhy() throws {
        let dir = "full-output-\(UUID().uuidString)"
        let body = Data.random(count: 4096)
        try nginx.serve(body, at: "\(dir)/level")
        try nginx.serve(Data("level \(body.count) optional \(nginx.http("\(dir)/level"))\n".utf8), at: "\(dir)/manifest.txt")
        let app = try App(manifestURL: nginx.http("\(dir)/manifest.txt"), allowList: ["127.0.0.1"])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestPlugins.bahost)
        process.arguments = [
            "run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install", "--info-plist", app.infoPlist,
            "--data-root", app.dataRoot.path, "--allow-insecure-loopback",
        ]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/full")
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 74, "\(message)")
        #expect(message.contains("bahost: cannot write its output: No space left on device"), "\(message)")

        #expect(app.leftovers().isEmpty)

        let again = try run(try TestPlugins.c("example_extension"), app, ["--allow-insecure-loopback"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(FileManager.default.contents(atPath: app.container.appendingPathComponent("Assets/level").path) == body)
    }

    @Test(.enabled(if: geteuid() == 0, "mounting a small tmpfs needs root"))
    func aFullDiskIsAClearFailureWithNothingLeftBehind() throws {
        let mountPoint = TestPlugins.scratch.appendingPathComponent("tiny-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=24m", "tmpfs", mountPoint.path]
        try mount.run()
        mount.waitUntilExit()
        try #require(mount.terminationStatus == 0)
        defer {
            let umount = Process()
            umount.executableURL = URL(fileURLWithPath: "/bin/umount")
            umount.arguments = [mountPoint.path]
            try? umount.run()
            umount.waitUntilExit()
        }
        let dir = "disk-\(UUID().uuidString)"
        try nginx.serve(Data.random(count: 40_000_000), at: "\(dir)/big.pack")
        try nginx.serve(Data("big 0 optional \(nginx.http("\(dir)/big.pack"))\n".utf8), at: "\(dir)/manifest.txt")
        let app = try App(manifestURL: nginx.http("\(dir)/manifest.txt"), allowList: ["127.0.0.1"], dataRoot: mountPoint)

        let result = try run(try TestPlugins.c("example_extension"), app, ["--allow-insecure-loopback"])
        #expect(result.status == 2)
        let failure = try #require(result.events("failed").first?["error"] as? [String: Any])
        #expect(failure["code"] as? Int == 1003)
        #expect((failure["message"] as? String)?.contains("the disk is full") == true)
        #expect(app.leftovers().isEmpty)
    }

    @Test func aCompletionWhoseCallbackCrashedIsDeliveredAgainThenNeverAgain() throws {
        let (app, body) = try appWithOneAsset("once", size: 100_000)

        let result = try run(try TestPlugins.c("probes/crash_once_on_finish"), app, ["--allow-insecure-loopback"])
        #expect(result.status == 0)
        let windows = result.events("window").map { ($0["stopReason"] as? [String: Any])?["kind"] as? String }
        #expect(windows == ["returned", "crashed", "returned"])
        #expect(names(result).filter { $0 == "delivered asset" }.count == 1)
        #expect(FileManager.default.contents(atPath: app.container.appendingPathComponent("asset").path) == body)
        #expect(app.leftovers().isEmpty)
    }

    /// Unique identifiers that climb out of a folder, or repeat another's, never name a path outside the data root or
    /// a file twice. Nor do the longest (1,024 bytes; Apple's own form holds the app group's identifier): once
    /// percent-encoded such a name passed the file system's 255 bytes, every transfer failed (ENAMETOOLONG), and
    /// delivery retried its ticket once a second without end.
    @Test func uniqueIdentifiersFromExtensionCodeNeverNameAPathOrCollide() throws {
        let root = TestPlugins.scratch.appendingPathComponent("deep-\(UUID().uuidString)/a/b/c/data")
        let (app, _) = try appWithOneAsset("hostile", size: 10_000, dataRoot: root)

        let result = try run(try TestPlugins.c("probes/hostile_unique_identifier"), app, ["--allow-insecure-loopback"])
        #expect(result.status == 0, "\(result.stdout)")
        let finished = result.events("finished")
        #expect(Set(finished.compactMap { $0["identifier"] as? String }) == ["first", "second", "long-1", "long-2"])
        let unique = Set(finished.compactMap { $0["uniqueIdentifier"] as? String })
        #expect(unique.count == 4)
        // Everything stayed inside the data root, each in a file of its own whose name fits.
        let paths = finished.compactMap { $0["path"] as? String }
        #expect(Set(paths).count == 4)
        for path in paths {
            #expect(URL(fileURLWithPath: path).standardizedFileURL.path.hasPrefix(root.path + "/"))
            #expect(URL(fileURLWithPath: path).lastPathComponent.utf8.count <= 248, "\(path)")
        }
        #expect(names(result).filter { $0.hasPrefix("delivered ") }.count == 4)
        var escaped = root
        for _ in 0..<4 { escaped.deleteLastPathComponent() }
        #expect(!FileManager.default.fileExists(atPath: escaped.appendingPathComponent("escaped").path))
        #expect(!FileManager.default.fileExists(atPath: escaped.appendingPathComponent("escaped.part").path))
        #expect(app.leftovers().isEmpty)
    }

    /// A delivery that keeps failing ends the run instead of being tried once a second for ever: here the container's
    /// deliveries folder is mounted read-only once it exists, so a failed download's ticket cannot be made. After 3
    /// failures in a row (1 s and 2 s apart) `bahost run` exits 75 and says the completion is left pending; `bahost
    /// resume` delivers it once the folder can be written, so nothing was lost.
    @Test(.enabled(if: geteuid() == 0, "a read-only bind mount needs root"))
    func aDeliveryThatKeepsFailingIsLeftPendingAndResumedLater() throws {
        let dir = "undeliverable-\(UUID().uuidString)"
        // Nothing is served at level-1.pack: a 404, whose failure is the completion to deliver.
        try nginx.serve(Data("level-1 1000 optional \(nginx.http("\(dir)/level-1.pack"))\n".utf8), at: "\(dir)/manifest.txt")
        let app = try App(manifestURL: nginx.http("\(dir)/manifest.txt"), allowList: ["127.0.0.1"])
        let deliveries = app.container.appendingPathComponent("Library/Caches/BackgroundAssets").path
        try FileManager.default.createDirectory(atPath: deliveries, withIntermediateDirectories: true)
        func mount(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/" + arguments[0])
            process.arguments = Array(arguments.dropFirst())
            try process.run()
            process.waitUntilExit()
            try #require(process.terminationStatus == 0, "\(arguments)")
        }
        try mount(["mount", "--bind", deliveries, deliveries])
        var mounted = true
        defer { if mounted { try? mount(["umount", deliveries]) } }
        try mount(["mount", "-o", "remount,bind,ro", deliveries])

        let plugin = try TestPlugins.c("example_extension")
        let started = try Bahost.start(
            ["run", "--plugin", plugin, "--event", "install", "--info-plist", app.infoPlist, "--data-root",
             app.dataRoot.path, "--allow-insecure-loopback", "--json"])
        // Before, the run never ended: a bound, so that such a run fails the test instead of hanging it.
        let watchdog = DispatchWorkItem { started.process.terminate() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: watchdog)
        let result = Bahost.finish(started)
        watchdog.cancel()
        #expect(result.status == 75, "\(result.stdout)")
        #expect(result.events("failed").map { $0["identifier"] as? String } == ["level-1"])
        let failures = result.events("deliveryFailed")
        // The last try says no more: the run leaves the completion pending instead.
        #expect(failures.map { $0["retryInSeconds"] as? Double } == [1, 2, nil])
        #expect(failures.allSatisfy { ($0["message"] as? String)?.contains("Read-only file system") == true })
        let left = result.events("deliveriesLeftPending")
        #expect(left.count == 1)
        #expect(left.first?["app"] as? String == "com.example.levels")
        #expect(left.first?["count"] as? Int == 1)
        #expect(result.events("summary").first?["undelivered"] as? Int == 1)
        #expect(result.events("delivered").isEmpty)

        try mount(["umount", deliveries])
        mounted = false
        let resumed = try Bahost.run(["resume", "--data-root", app.dataRoot.path, "--json"])
        #expect(resumed.status == 0, "\(resumed.stdout)")
        #expect(names(resumed).filter { $0.hasPrefix("delivered ") } == ["delivered level-1"])
        #expect(resumed.events("deliveryFailed").isEmpty)
    }

    @Test func aFailedEssentialDownloadIsRequeuedFromTheCallbackAsNonEssential() throws {
        let dir = "requeue-\(UUID().uuidString)"
        // Nothing is served at level-1.pack: 404, permanent.
        try nginx.serve(Data("level-1 1000 essential \(nginx.http("\(dir)/level-1.pack"))\n".utf8), at: "\(dir)/manifest.txt")
        let app = try App(manifestURL: nginx.http("\(dir)/manifest.txt"), allowList: ["127.0.0.1"])

        let result = try run(try TestPlugins.c("example_extension"), app, ["--allow-insecure-loopback"])
        #expect(result.status == 2)
        let queued = result.events("queued").map { $0["essential"] as? Bool }
        // Queued essential from the content request, then again, non-essential, from backgroundDownload(_:failedWithError:).
        #expect(queued == [true, false])
        let failed = result.events("failed")
        #expect(failed.map { ($0["error"] as? [String: Any])?["code"] as? Int } == [404, 404])
        #expect(Set(failed.compactMap { $0["uniqueIdentifier"] as? String }).count == 2)
        #expect(names(result).filter { $0 == "delivered level-1" }.count == 2)
    }

    @Test func pausesSayWhetherTheyWaitForTheNetworkOrToRetry() throws {
        let faults = try FaultServer()
        let body = Data.random(count: 5000)
        faults.serve(body, at: "busy.pack", faults: [.status(503, retryAfter: "1")])
        let unreachable = "http://127.0.0.1:\(try Nginx.freePort())/gone.pack"
        faults.serve(Data("busy 5000 optional \(faults.url("busy.pack"))\ngone 10 optional \(unreachable)\n".utf8), at: "manifest.txt")
        let app = try App(manifestURL: faults.url("manifest.txt"), allowList: ["127.0.0.1"])

        let result = try run(try TestPlugins.c("example_extension"), app, ["--allow-insecure-loopback", "--max-attempts", "2", "--connect-timeout", "1"])
        #expect(result.status == 2)
        let paused = Dictionary(uniqueKeysWithValues: result.events("paused").map {
            ($0["identifier"] as? String ?? "", ($0["reason"] as? String ?? "", $0["retryInSeconds"] as? Double ?? -1))
        })
        #expect(paused["busy"]?.0 == "waitingToRetry")
        #expect((paused["busy"]?.1 ?? 0) > 0.5 && (paused["busy"]?.1 ?? 9) <= 1.0)
        #expect(paused["gone"]?.0 == "waitingForNetwork")
        #expect(names(result).contains("finished busy"))
        #expect(((result.events("failed").first?["error"] as? [String: Any])?["code"] as? Int) == -1004)
        #expect(faults.requests(for: "busy.pack").count == 2)
    }
}

/// Reads a pipe to its end on a thread of its own.
final class OutputCollector: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var data = Data()

    init(_ pipe: Pipe) {
        Thread.detachNewThread {
            self.data = pipe.fileHandleForReading.readDataToEndOfFile()
            self.done.signal()
        }
    }

    /// Everything written, once the writer has gone.
    func text() -> String {
        done.wait()
        return String(decoding: data, as: UTF8.self)
    }
}
