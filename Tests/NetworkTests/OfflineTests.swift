import Foundation
import Testing
import TestSupport

/// Offline is a state, not a failure (docs/DOWNLOADS.md, "Offline"): `bahost run` in a client namespace downloads
/// from nginx in a server namespace while the tests take the link down and up, or move the route. Each asserts what
/// happened to the download, never how long it took (the benchmark measures that).
@Suite(.serialized, .enabled(if: NetworkLab.unavailable == nil, "\(NetworkLab.unavailable ?? "")"))
struct OfflineTests {
    /// An app whose manifest, served by the lab, names one essential download of `size` bytes on `/slow/`.
    struct LabApp {
        let infoPlist: String
        let dataRoot: URL
        let body: Data
        let path: String

        init(_ lab: NetworkLab, size: Int) throws {
            let dir = "slow/\(UUID().uuidString)"
            body = Data.random(count: size)
            path = "\(dir)/level.pack"
            let url = try lab.serve(body, at: path)
            let manifest = try lab.serve(Data("level \(size) essential \(url)\n".utf8), at: "\(dir)/manifest.txt")
            dataRoot = TestPlugins.scratch.appendingPathComponent("data-\(UUID().uuidString)")
            let values: [String: Any] = [
                "CFBundleIdentifier": "com.example.levels", "BAAppGroupID": "group.com.example.levels",
                "BAManifestURL": manifest,
                "BAInitialDownloadRestrictions": [
                    "BADownloadAllowance": 100_000_000, "BAEssentialDownloadAllowance": 100_000_000,
                    "BADownloadDomainAllowList": [NetworkLab.host],
                ] as [String: Any],
                "BAMaxInstallSize": 100_000_000,
            ]
            let data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
            infoPlist = TestPlugins.scratch.appendingPathComponent("\(UUID().uuidString)-Info.plist").path
            try data.write(to: URL(fileURLWithPath: infoPlist))
        }

        /// Bytes of the download on disk so far (its partial file), 0 before it starts.
        var partialBytes: Int {
            let folder = dataRoot.appendingPathComponent("transfers").path
            return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).reduce(0) { sum, name in
                sum + ((try? FileManager.default.attributesOfItem(atPath: "\(folder)/\(name)")[.size] as? Int) ?? 0)
            }
        }
    }

    /// Starts `bahost run` for `app`'s install in the lab's client namespace.
    func start(_ lab: NetworkLab, _ app: LabApp, _ extra: [String]) throws -> (process: Process, out: Pipe, err: Pipe) {
        let (executable, arguments) = lab.command(TestPlugins.bahost, [
            "run", "--plugin", try TestPlugins.c("example_extension"), "--event", "install", "--info-plist", app.infoPlist,
            "--data-root", app.dataRoot.path, "--ca-file", lab.caFile, "--json",
        ] + extra)
        return try Bahost.start(arguments, executable: executable)
    }

    /// Waits until `condition` holds, for at most `seconds`; false if it never did.
    func wait(_ seconds: Double, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            guard Date() < deadline else { return false }
            usleep(20_000)
        }
        return true
    }

    /// The run's result, or a failure once `seconds` passed (the run is then killed: a download that waited out a
    /// timeout it should not have).
    func finish(_ run: (process: Process, out: Pipe, err: Pipe), within seconds: Double) -> Bahost.Result? {
        let killer = DispatchWorkItem { if run.process.isRunning { kill(run.process.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: killer)
        let result = Bahost.finish(run)
        killer.cancel()
        return result.status == 9 || run.process.terminationReason == .uncaughtSignal ? nil : result
    }

    /// The link goes down in the middle of a download and stays down through more failed tries than the download
    /// has attempts; when it comes back the download resumes from the bytes it kept and finishes. No attempt was
    /// consumed by the outage, and the transfer on the dead link was dropped when the link went, not after the read
    /// timeout.
    @Test func anOutageConsumesNoAttemptAndTheDownloadResumesWhenTheLinkReturns() throws {
        let lab = try NetworkLab(rate: "1m")
        defer { lab.close() }
        let app = try LabApp(lab, size: 6 << 20)
        let run = try start(lab, app, ["--max-attempts", "2", "--read-timeout", "600", "--retry-delay", "0.05"])
        #expect(wait(30) { app.partialBytes >= 1 << 20 }, "the download never got going")
        try lab.linkDown()
        // Long enough for the probes to fail several times (at 0.25, 1, 2 and 4 s), each once an attempt before.
        usleep(8_000_000)
        let keptDuringOutage = app.partialBytes
        try lab.linkUp()
        let result = try #require(finish(run, within: 60), "the download did not finish after the link returned")

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["level"])
        #expect(result.events("failed").isEmpty, "\(result.events("failed"))")
        let waits = result.events("paused").filter { $0["reason"] as? String == "waitingForNetwork" }
        #expect(waits.count > 2, "the outage was tried \(waits.count) times: fewer than the attempts it should not use")
        let requests = lab.requests(for: app.path)
        #expect(requests.count == 2, "\(requests)")
        #expect(requests.last?.contains("\"bytes=\(keptDuringOutage)-\"") == true, "resumed from \(keptDuringOutage): \(requests)")
        #expect(keptDuringOutage >= 1 << 20 && keptDuringOutage < 6 << 20)
    }

    /// The route to the server moves to another link and the first goes down (Wi-Fi to Ethernet): the transfer on
    /// the old path is dropped at once and resumes on the new one, from the new address, with a read timeout
    /// (600 s) it would otherwise have waited out, and one attempt in all.
    @Test func aRouteChangeMovesTheTransferToTheNewPathAtOnce() throws {
        let lab = try NetworkLab(rate: "1m")
        defer { lab.close() }
        let app = try LabApp(lab, size: 5 << 20)
        let run = try start(lab, app, ["--max-attempts", "1", "--read-timeout", "600"])
        #expect(wait(30) { app.partialBytes >= 1 << 20 }, "the download never got going")
        try lab.switchRoute()
        let result = try #require(finish(run, within: 60), "the transfer waited on the old path")

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["level"])
        let requests = lab.requests(for: app.path)
        #expect(requests.count == 2, "\(requests)")
        #expect(requests.first?.hasPrefix("10.77.1.2 ") == true, "\(requests)")
        #expect(requests.last?.hasPrefix("10.77.2.2 ") == true && requests.last?.contains("\"bytes=") == true, "\(requests)")
    }
}
