import Foundation
import Testing
import TestSupport

/// The service stopped in the middle of a transfer, by SIGKILL or SIGTERM, loses nothing: the transfer resumes where
/// it stopped when it starts again, and the app that waits for the completion gets it.
@Suite(.ownThreads) struct DurabilityTests {
    let nginx = Nginx.shared

    /// A launched app and a slow download in flight, scheduled by a running app process waiting for it.
    func inFlight(_ levelsApp: LevelsApp) throws
        -> (ServiceDaemon, TestApp, Data, String, (process: Process, out: Pipe, err: Pipe))
    {
        let dir = "dur-\(UUID().uuidString.prefix(8))"
        try nginx.serve(Data(#"{"assets": []}"#.utf8), at: "\(dir)/manifest.json")
        let app = try TestApp(manifestURL: nginx.https("\(dir)/manifest.json"), plugin: TestPlugins.swiftExample)
        let daemon = try ServiceDaemon()
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        #expect(try daemon.report(["launch", app.identifier]).status == 0)
        let data = Data.random(count: 3_000_000)
        let path = try nginx.serve(data, at: "slow/\(dir)/big.pack")
        let waiting = try levelsApp.start(
            ["--schedule", "big=\(nginx.https(path))@3000000", "--wait-for", "1", "--timeout", "60"],
            app: app.identifier, daemon: daemon)
        // Bytes are on disk and recorded before the service is stopped.
        #expect(try ServiceDaemon.waitUntil {
            (try daemon.downloads(app.identifier)["big"]?["bytesReceived"] as? Int ?? 0) > 0
        })
        return (daemon, app, data, path, waiting)
    }

    func finishes(_ daemon: ServiceDaemon, _ app: TestApp, _ data: Data, _ path: String,
                  _ waiting: (process: Process, out: Pipe, err: Pipe)) throws {
        waiting.process.waitUntilExit()
        let output = String(decoding: waiting.out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(waiting.process.terminationStatus == 0, "\(output)")
        let finished = output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.first { $0["event"] as? String == "finished" }
        let file = try #require(finished?["path"] as? String, "\(output)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == data)
        // It resumed: the last request for the file asked for a range.
        let requests = try nginx.requests(for: path)
        #expect(requests.last?.contains("bytes=") == true, "\(requests)")
        #expect(try daemon.downloads(app.identifier)["big"]?["delivered"] as? Bool == true)
    }

    @Test(arguments: LevelsApp.all) func killedWithSIGKILLAndRestartedNothingIsLost(levelsApp: LevelsApp) throws {
        let (daemon, app, data, path, waiting) = try inFlight(levelsApp)
        daemon.stop(SIGKILL)
        try daemon.restart()
        try finishes(daemon, app, data, path, waiting)
    }

    @Test(arguments: LevelsApp.all) func stoppedWithSIGTERMItStopsCleanlyAndResumesLater(levelsApp: LevelsApp) throws {
        let (daemon, app, data, path, waiting) = try inFlight(levelsApp)
        #expect(daemon.stop(SIGTERM) == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
        #expect(daemon.logText.contains("stopped"))
        try daemon.restart()
        try finishes(daemon, app, data, path, waiting)
    }
}
