import Foundation
import Testing
import TestSupport

/// Background downloads yield to the user's traffic (docs/DOWNLOADS.md, "Background traffic"): on a 40 Mbit/s line
/// with a home router's queue, bahost's background transfer opens its receive window while it is alone, and closes
/// it to the floor while the user's own download fills the queue. Rates and delays are the benchmark's
/// (`Benchmarks/network.sh`); this asserts what bahost does about them.
@Suite(.ownThreads, .serialized, .enabled(if: NetworkLab.unavailable == nil, "\(NetworkLab.unavailable ?? "")"))
struct BackgroundTrafficTests {
    @Test(.alone) func aBackgroundDownloadClosesItsWindowWhileTheUsersDownloadFillsTheQueue() throws {
        let lab = try NetworkLab()
        defer { lab.close() }
        try lab.addBottleneck()
        let app = try LabApp(lab, size: 90 << 20, sparse: true)
        let run = try start(lab, app, ["--max-attempts", "1"], event: "periodic")
        defer { if run.process.isRunning { kill(run.process.processIdentifier, SIGKILL) } }
        guard wait(30, until: { app.partialBytes >= 8 << 20 }) else {
            kill(run.process.processIdentifier, SIGKILL)
            let result = Bahost.finish(run)
            Issue.record("the background download never got going: \(result.stdout.suffix(2000)) \(result.stderr.suffix(1000))")
            return
        }
        let alone = try lab.receiveBufferOfBusiestConnection(of: "bahost") ?? 0

        // The user's download, at full speed: its queue is what the background one must leave alone.
        let (executable, arguments) = lab.command("/usr/bin/curl", [
            "-s", "--cacert", lab.caFile, "-o", "/dev/null", "--max-time", "8", lab.url(app.path),
        ])
        let user = Process()
        user.executableURL = URL(fileURLWithPath: executable)
        user.arguments = arguments
        try user.run()
        defer { if user.isRunning { user.terminate() } }
        usleep(4_000_000)
        let beside = try lab.receiveBufferOfBusiestConnection(of: "bahost")
        user.waitUntilExit()

        // Alone, the window grew past its start (64 KiB, 128 as the kernel counts the buffer); beside the user's
        // download, it is two segments' worth (the kernel doubles what it is given, and rounds up).
        #expect(alone > 128 << 10, "alone: \(alone)")
        #expect(beside.map { $0 <= 16 << 10 } == true, "beside the user's download: \(String(describing: beside))")
    }
}
