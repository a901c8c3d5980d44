import CBAExtension
import CHostSupport
import ExtensionWire
import Foundation
import Vocabulary

/// One time-boxed run of an extension in a child process of its own.
///
/// The window spawns the runner, which dlopens the extension; delivers `events` one after another; answers the
/// extension's host function calls through `services`; and ends the moment every entry point has returned. At the
/// deadline it has `extensionWillTerminate` called, even while an entry point is stuck, waits the grace period,
/// and kills the process. Whatever the extension does, `run` returns an outcome with exactly one stop reason.
public final class ExtensionWindow {
    public let pluginPath: String
    public let limits: WindowLimits
    public let appGroup: AppGroup?
    /// Whether the window's process is sandboxed (docs/SANDBOX.md); off only to debug an extension.
    public let sandboxed: Bool
    private let runnerPath: String

    /// The app group whose container the extension may use: its process gets `BAHOST_APP_GROUP` and
    /// `BAHOST_APP_GROUP_CONTAINER`, which the SDK's `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`
    /// answers from (and C extensions read with getenv).
    public struct AppGroup: Sendable, Hashable {
        public var identifier: String
        public var container: String

        public init(identifier: String, container: String) {
            self.identifier = identifier
            self.container = container
        }
    }

    /// - Parameters:
    ///   - pluginPath: the extension; a relative path is taken from the current folder (dlopen would otherwise search
    ///     the library path for a bare file name).
    ///   - runnerPath: the runner executable; by default `bahost-extension-runner` beside this program.
    ///   - sandboxed: false only to debug; by default on unless `BAHOST_SANDBOX=off` (`--sandbox off`).
    public init(
        pluginPath: String, limits: WindowLimits = .default, appGroup: AppGroup? = nil, runnerPath: String? = nil,
        sandboxed: Bool = ProcessInfo.processInfo.environment["BAHOST_SANDBOX"] != "off"
    ) throws(WindowSetupError) {
        self.pluginPath = URL(fileURLWithPath: pluginPath).path
        self.sandboxed = sandboxed
        self.limits = limits
        self.appGroup = appGroup
        if let runnerPath {
            self.runnerPath = runnerPath
        } else {
            self.runnerPath = try RunnerProcess.locateRunner()
        }
    }

    /// Runs the window to its end on the calling thread.
    /// - Parameters:
    ///   - onLog: sees each log line as it arrives (for live output); the outcome has them all too.
    ///   - onReturned: takes what content requests return as it arrives, with the event's index, instead of the
    ///     outcome's `returnedDownloads` holding it (a request may return 100,000). What a call that never
    ///     returned added reaches it too: its caller keeps only what `completedEvents` covers. The time it takes is
    ///     the host's, not the extension's: the budget's deadline moves by it.
    public func run(
        _ events: [WindowEvent], services: ExtensionHostServices? = nil,
        onLog: ((WindowLogLine) -> Void)? = nil, onReturned: ((Int, [Download]) -> Void)? = nil
    ) throws(WindowSetupError) -> WindowOutcome {
        let loop = WindowLoop(events: events, limits: limits, services: services, onLog: onLog, onReturned: onReturned)
        var environment = appGroup.map {
            ["BAHOST_APP_GROUP": $0.identifier, "BAHOST_APP_GROUP_CONTAINER": $0.container]
        } ?? [:]
        // Beyond the container, the sandbox lets the extension read this window's manifests and handle the files it
        // is given (in the service they lie in the container already; the harness keeps them in a scratch folder).
        // Each folder is named once: a delivery's files share one, and a line for each of 256 files made a variable
        // past the kernel's limit for one (128 KiB) once the folder's path was 512 bytes long, and execve failed.
        var readable: [String] = [], writable: [String] = [], named: Set<String> = []
        for event in events {
            switch event {
            case .contentRequest(_, let manifestPath, _): readable.append(manifestPath)
            case .downloadFinished(_, let filePath), .downloadFailed(_, _, ticket: let filePath?):
                // What NSString's `deletingLastPathComponent` gives for the host's own paths, without its cost for
                // every file a delivery hands over.
                let folder =
                    filePath.lastIndex(of: "/").map { $0 == filePath.startIndex ? "/" : String(filePath[..<$0]) } ?? ""
                if named.insert(folder).inserted { writable.append(folder) }
            default: break
            }
        }
        environment["BAHOST_SANDBOX"] = sandboxed ? "on" : "off"
        environment["BAHOST_SANDBOX_READ"] = readable.joined(separator: "\n")
        environment["BAHOST_SANDBOX_WRITE"] = writable.joined(separator: "\n")
        return loop.run(
            try RunnerProcess(runner: runnerPath, plugin: pluginPath, environment: environment, limits: limits))
    }
}

/// The window's driver, between spawn and reap: it polls the runner's socket and output, reads the clock and the
/// memory, calls the host's services, and carries out what the window's protocol (`WindowProtocol`) decides.
private final class WindowLoop {
    let events: [WindowEvent]
    let services: ExtensionHostServices?
    let onLog: ((WindowLogLine) -> Void)?
    /// Where returned downloads go as they arrive, when not into the outcome.
    let onReturned: ((Int, [Download]) -> Void)?

    let clock = ContinuousClock()
    var window: WindowProtocol
    var process: RunnerProcess!
    var log = WindowLog()
    /// Whether the output pipe still has a writer.
    var outputOpen = true
    /// What this turn may still read of the output.
    var outputLeft = 0
    var outputChunk = [UInt8](repeating: 0, count: 16 * 1024)

    /// What one turn of the loop reads at most, so that an extension that floods the socket or the pipe cannot
    /// keep the loop from its deadlines.
    static let packetsPerTurn = 256
    static let outputBytesPerTurn = 256 * 1024

    init(
        events: [WindowEvent], limits: WindowLimits, services: ExtensionHostServices?,
        onLog: ((WindowLogLine) -> Void)?, onReturned: ((Int, [Download]) -> Void)?
    ) {
        self.events = events
        self.services = services
        self.onLog = onLog
        self.onReturned = onReturned
        window = WindowProtocol(
            events: events, limits: limits, start: clock.now, streamsReturned: onReturned != nil,
            hasServices: services != nil)
    }

    func run(_ process: RunnerProcess) -> WindowOutcome {
        self.process = process
        var channelOpen = true
        var packet = [UInt8](repeating: 0, count: Int(BA_WIRE_MAX_PACKET))
        var exit: Int32?

        while exit == nil {
            var fds: [pollfd] = []
            if channelOpen {
                let events = process.hasPendingOutput ? Int16(POLLIN) | Int16(POLLOUT) : Int16(POLLIN)
                fds.append(pollfd(fd: process.channel, events: events, revents: 0))
            }
            if outputOpen { fds.append(pollfd(fd: process.output, events: Int16(POLLIN), revents: 0)) }
            if process.exitSignal >= 0 { fds.append(pollfd(fd: process.exitSignal, events: Int16(POLLIN), revents: 0)) }
            let wait = window.nextWakeUp(after: clock.now) - clock.now
            _ = bahost_poll(&fds, nfds_t(fds.count), max(0, wait.inNanoseconds))

            outputLeft = Self.outputBytesPerTurn
            if channelOpen { channelOpen = drainChannel(&packet) }
            if channelOpen && process.hasPendingOutput { process.flush() }
            drainOutput()
            if let reaped = process.tryReap() {
                exit = reaped
                // What the process wrote before dying is still in the socket and the pipe.
                outputLeft = Self.outputBytesPerTurn
                if channelOpen { _ = drainChannel(&packet) }
                drainOutput()
            } else {
                let now = clock.now
                apply(window.tick(at: now, memory: window.wantsSample(at: now) ? sampleMemory() : nil))
                apply(window.lockStep(at: clock.now))
                apply(window.endIfDone(at: clock.now))
            }
        }
        let elapsed = clock.now - window.start
        process.killGroup()
        events.forEach(deleteManifest)
        if window.holdsExclusiveControl { services?.releaseExclusiveControl() }
        if let line = log.flushOutput(at: elapsed.inSeconds) { onLog?(line) }
        let kernel = kernelMemoryKill()
        let reason = window.reason(exitStatus: exit!, killedByTheKernelForMemory: kernel.killed)
        return window.outcome(
            reason: reason, elapsed: elapsed, peakResidentBytes: max(window.peakResident, kernel.peakBytes ?? 0),
            log: log.lines(endingAt: elapsed.inSeconds))
    }

    /// The window's memory: its processes' resident bytes summed, and whether the kernel killed one of them.
    func sampleMemory() -> WindowProtocol.MemorySample {
        let kernel = kernelMemoryKill()
        return WindowProtocol.MemorySample(
            residentBytes: process.residentBytes, killedByTheKernel: kernel.killed, cgroupPeakBytes: kernel.peakBytes)
    }

    /// Whether the kernel killed a process of the window at its cgroup's memory ceiling (the window then ends killed
    /// for memory, whichever process the kernel chose), and then the cgroup's peak.
    func kernelMemoryKill() -> (killed: Bool, peakBytes: Int64?) {
        guard let cgroup = process.cgroup, cgroup.memoryKills > 0 else { return (false, nil) }
        return (true, cgroup.peakBytes)
    }

    /// Carries out what the window's protocol decided, in order.
    func apply(_ actions: [WindowProtocol.Action]) {
        for action in actions {
            switch action {
            case .sendEvents:
                for (index, event) in events.enumerated() { process.send(WirePacket.event(event, id: UInt32(index + 1))) }
            case .sendWillTerminate:
                process.send(WirePacket(BA_WIRE_WILL_TERMINATE))
            case .sendEnd:
                process.send(WirePacket(BA_WIRE_END))
            case .reply(let id, let result):
                process.send(WirePacket.reply(id, result))
            case .perform(let id, let call):
                perform(call, id: id)
            case .deliver(let index, let downloads):
                let began = clock.now
                onReturned?(index, downloads)
                window.hostTook(clock.now - began)
            case .deleteManifest(let index):
                deleteManifest(of: events[index])
            case .log(let source, let text):
                record(source, text)
            case .kill:
                process.kill()
            case .tryLock:
                if let services { apply(window.lockTried(services.tryAcquireExclusiveControl(), at: clock.now)) }
            case .releaseLock:
                services?.releaseExclusiveControl()
            }
        }
    }

    /// A host call the host's services answer.
    func perform(_ call: HostCall, id: UInt32) {
        guard let services else { return }
        switch call {
        case .schedule(let download):
            apply(window.performed(id: id, call, services.schedule(download)))
        case .cancel(let download):
            apply(window.performed(id: id, call, services.cancel(download)))
        case .fetchCurrentDownloads:
            switch services.currentDownloads() {
            case .success(let downloads):
                for download in downloads { process.send(WirePacket.replyDownload(id, download)) }
                apply(window.performed(id: id, call, .success(())))
            case .failure(let error):
                apply(window.performed(id: id, call, .failure(error)))
            }
        case .startForeground, .acquireExclusiveControl, .releaseExclusiveControl:
            break  // the protocol answers these itself
        }
    }

    /// Apple: the manifest "is read-only and will be deleted after this method returns".
    func deleteManifest(of event: WindowEvent) {
        if case .contentRequest(_, let manifestPath, _) = event { unlink(manifestPath) }
    }

    // MARK: Reading

    /// Reads the waiting packets, up to a turn's worth; false once the runner has closed its end.
    func drainChannel(_ buffer: inout [UInt8]) -> Bool {
        for _ in 0..<Self.packetsPerTurn {
            let count = buffer.withUnsafeMutableBytes { recv(process.channel, $0.baseAddress, $0.count, 0) }
            // A runner that exits with events it never read makes the kernel report ECONNRESET once, before the
            // packets it sent: they are still to be read (its last downloads, or why it failed).
            if count < 0 && errno == ECONNRESET { continue }
            if count < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
            if count == 0 { return false }
            guard window.stopReason == nil else { continue }
            // What the extension printed before it sent this packet is in the pipe by now: logged first, the
            // output and the messages keep the order the extension made them in (unless it printed more than the
            // turn's share, which only a flood does).
            drainOutput()
            let decoded = buffer.withUnsafeBytes { bytes in
                Result { () throws(WireViolation) in
                    try RunnerMessage.decode(UnsafeRawBufferPointer(rebasing: bytes.prefix(count)))
                }
            }
            apply(window.receive(decoded, at: clock.now))
        }
        return true
    }

    /// Reads what the process printed, until the pipe is empty or the turn's share is read, and until every writer
    /// has closed the pipe.
    func drainOutput() {
        guard outputOpen else { return }
        while outputLeft > 0 {
            let count = outputChunk.withUnsafeMutableBytes {
                read(process.output, $0.baseAddress, min($0.count, outputLeft))
            }
            if count < 0 {
                outputOpen = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
                return
            }
            if count == 0 {
                outputOpen = false
                return
            }
            outputLeft -= count
            let lines = log.append(output: outputChunk.prefix(count), at: (clock.now - window.start).inSeconds)
            for line in lines { onLog?(line) }
        }
    }

    func record(_ source: WindowLogLine.Source, _ text: String) {
        // Kept first: `onLog?(…)` would skip evaluating its argument when there is no `onLog`.
        let line = log.record(source, text, at: (clock.now - window.start).inSeconds)
        onLog?(line)
    }
}
