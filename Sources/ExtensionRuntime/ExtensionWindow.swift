// Over 400 lines: the poll loop and the protocol's states still share one class (a state machine and driver to come).
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
        let loop = WindowLoop(events: events, limits: limits, services: services, onLog: onLog)
        loop.onReturned = onReturned
        var environment = appGroup.map {
            ["BAHOST_APP_GROUP": $0.identifier, "BAHOST_APP_GROUP_CONTAINER": $0.container]
        } ?? [:]
        // Beyond the container, the sandbox lets the extension read this window's manifests and handle the files it
        // is given (in the service they lie in the container already; the harness keeps them in a scratch folder).
        var readable: [String] = [], writable: [String] = []
        for event in events {
            switch event {
            case .contentRequest(_, let manifestPath, _): readable.append(manifestPath)
            case .downloadFinished(_, let filePath), .downloadFailed(_, _, ticket: let filePath?):
                writable.append((filePath as NSString).deletingLastPathComponent)
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

/// The state of one window between spawn and reap.
private final class WindowLoop {
    let events: [WindowEvent]
    let limits: WindowLimits
    let services: ExtensionHostServices?
    let onLog: ((WindowLogLine) -> Void)?

    let clock = ContinuousClock()
    let start: ContinuousClock.Instant
    var deadline: ContinuousClock.Instant
    /// Where returned downloads go as they arrive, when not into `returned`.
    var onReturned: ((Int, [Download]) -> Void)?
    var returnedCount = 0

    var process: RunnerProcess!
    var stopReason: StopReason?
    var loadFailure: (LoadFailure, String)?
    /// The runner's own report that it failed, which the window's end blames on the runner.
    var runnerFailure: String?
    var helloAt: ContinuousClock.Instant?
    var identifier: String?
    var abiVersion: String?
    var sandbox: String?
    var completedEvents = 0
    /// What content requests added, with the event that added them.
    var returned: [(eventID: UInt32, download: Download)] = []
    /// What `shouldDownload(_:)` answered, by event.
    var answers: [UInt32: Bool] = [:]
    /// How challenges were answered, by event; the window waits for every one.
    var challengeAnswers: [UInt32: ChallengeAnswer] = [:]
    let challengeEvents: Int
    var filesLeftBehind: Set<Int> = []
    var refused: [RefusedCall] = []
    var log = WindowLog()
    var peakResident: Int64 = 0
    /// When the resident memory was last read: once a sampling period at most, however many packets a turn reads.
    var sampledAt: ContinuousClock.Instant?
    var endSent = false
    var terminateSentAt: ContinuousClock.Instant?
    var killAt: ContinuousClock.Instant?
    var killSentAt: ContinuousClock.Instant?
    var holdsExclusiveControl = false
    /// Acquire calls waiting for the lock: call id and until when (nil: as long as the window lasts).
    var waitingForLock: [(id: UInt32, until: ContinuousClock.Instant?)] = []

    /// The resident memory sampling period: the longest an extension can allocate unseen.
    static let samplingPeriod = Duration.milliseconds(5)
    /// What one turn of the loop reads at most, so that an extension that floods the socket or the pipe cannot
    /// keep the loop from its deadlines.
    static let packetsPerTurn = 256
    static let outputBytesPerTurn = 256 * 1024
    /// What the host keeps of one window's returned downloads; past it the window stops (its log: `WindowLog`).
    static let maxReturnedDownloads = 100_000

    init(
        events: [WindowEvent], limits: WindowLimits, services: ExtensionHostServices?,
        onLog: ((WindowLogLine) -> Void)?
    ) {
        self.events = events
        self.limits = limits
        self.services = services
        self.onLog = onLog
        challengeEvents = events.count { if case .challenge = $0 { true } else { false } }
        start = clock.now
        deadline = start + limits.budget
    }

    func run(_ process: RunnerProcess) -> WindowOutcome {
        self.process = process
        var channelOpen = true
        var outputOpen = true
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
            let wait = nextWakeUp() - clock.now
            _ = bahost_poll(&fds, nfds_t(fds.count), max(0, wait.inNanoseconds))

            if channelOpen { channelOpen = drainChannel(&packet) }
            if channelOpen && process.hasPendingOutput { process.flush() }
            if outputOpen { outputOpen = drainOutput() }
            if let reaped = process.tryReap() {
                exit = reaped
                // What the process wrote before dying is still in the socket and the pipe.
                if channelOpen { _ = drainChannel(&packet) }
                if outputOpen { _ = drainOutput() }
            } else {
                enforceLimits()
                grantExclusiveControl()
                endIfDone()
            }
        }
        let elapsed = clock.now - start
        process.killGroup()
        events.forEach(deleteManifest)
        if holdsExclusiveControl { services?.releaseExclusiveControl() }
        if let line = log.flushOutput(at: elapsed.inSeconds) { onLog?(line) }
        let reason = stopReason ?? classify(exit!)
        // Apple schedules what downloads(for:) returns: nothing from a call that never returned, and nothing at all
        // from an extension that broke the protocol.
        var kept = returned.filter { $0.eventID <= UInt32(completedEvents) }.map(\.download)
        if case .protocolViolation = reason { kept = [] }
        var packAnswers: [String: Bool] = [:]
        if case .protocolViolation = reason {} else {
            for (eventID, answer) in answers where eventID <= UInt32(completedEvents) {
                if case .shouldDownload(let offer) = events[Int(eventID) - 1] { packAnswers[offer.id] = answer }
            }
        }
        var outcome = WindowOutcome(
            stopReason: reason, elapsed: elapsed, activation: helloAt.map { $0 - start },
            extensionIdentifier: identifier, abiVersion: abiVersion, sandbox: sandbox, returnedDownloads: kept,
            completedEvents: completedEvents, willTerminateSentAt: terminateSentAt.map { ($0 - start).inSeconds },
            killSentAt: killSentAt.map { ($0 - start).inSeconds },
            refusedCalls: refused, log: log.lines(endingAt: elapsed.inSeconds), peakResidentBytes: peakResident)
        outcome.assetPackAnswers = packAnswers
        if case .protocolViolation = reason {} else {
            outcome.challengeAnswers = Dictionary(uniqueKeysWithValues: challengeAnswers.map { (Int($0.key) - 1, $0.value) })
        }
        outcome.filesLeftBehind = filesLeftBehind
        return outcome
    }

    // MARK: Deadlines

    func nextWakeUp() -> ContinuousClock.Instant {
        var next = clock.now + Self.samplingPeriod
        if terminateSentAt == nil && !endSent { next = min(next, deadline) }
        if let killAt { next = min(next, killAt) }
        return next
    }

    func enforceLimits() {
        let now = clock.now
        if sampledAt.map({ now - $0 >= Self.samplingPeriod }) ?? true {
            sampledAt = now
            let resident = process.residentBytes
            peakResident = max(peakResident, resident)
            if (resident > limits.memoryBytes || killedByTheKernelForMemory) && stopReason == nil {
                stop(.killedForMemory(limitBytes: limits.memoryBytes))
                return
            }
        }
        if terminateSentAt == nil && !endSent && now >= deadline {
            terminateSentAt = now
            killAt = now + limits.grace
            process.send(WirePacket(BA_WIRE_WILL_TERMINATE))
        }
        if let killAt, now >= killAt, stopReason == nil {
            // After END the runner exits at once; one that does not is killed, and the window still returned.
            stop(terminateSentAt != nil ? .budgetExceeded(willTerminateReturned: false) : .returned)
        }
    }

    func endIfDone() {
        guard helloAt != nil, !endSent, terminateSentAt == nil, stopReason == nil,
            completedEvents == events.count, challengeAnswers.count == challengeEvents, !holdsExclusiveControl,
            waitingForLock.isEmpty
        else { return }
        endSent = true
        killAt = clock.now + limits.grace
        process.send(WirePacket(BA_WIRE_END))
    }

    func stop(_ reason: StopReason) {
        if stopReason == nil { stopReason = reason }
        if killSentAt == nil { killSentAt = clock.now }
        process.kill()
    }

    /// Whether the kernel killed a process of the window at its cgroup's memory ceiling: the window ends killed for
    /// memory, whichever of its processes the kernel chose, and its peak is the cgroup's.
    var killedByTheKernelForMemory: Bool {
        guard let cgroup = process.cgroup, cgroup.memoryKills > 0 else { return false }
        peakResident = max(peakResident, cgroup.peakBytes ?? 0)
        return true
    }

    func classify(_ status: Int32) -> StopReason {
        if let (failure, message) = loadFailure { return .refusedToLoad(failure, message) }
        if killedByTheKernelForMemory { return .killedForMemory(limitBytes: limits.memoryBytes) }
        if let runnerFailure { return .runnerFailed(runnerFailure) }
        if endSent { return .returned }
        if bahost_signaled(status) != 0 { return .crashed(signal: bahost_signal(status)) }
        return .exited(code: bahost_exit_code(status))
    }

    // MARK: Messages

    /// Reads the waiting packets, up to a turn's worth; false once the runner has closed its end.
    func drainChannel(_ buffer: inout [UInt8]) -> Bool {
        for _ in 0..<Self.packetsPerTurn {
            let count = buffer.withUnsafeMutableBytes { recv(process.channel, $0.baseAddress, $0.count, 0) }
            // A runner that exits with events it never read makes the kernel report ECONNRESET once, before the
            // packets it sent: they are still to be read (its last downloads, or why it failed).
            if count < 0 && errno == ECONNRESET { continue }
            if count < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
            if count == 0 { return false }
            guard stopReason == nil else { continue }
            let decoded = buffer.withUnsafeBytes { bytes in
                Result { () throws(WireViolation) in
                    try RunnerMessage.decode(UnsafeRawBufferPointer(rebasing: bytes.prefix(count)))
                }
            }
            do throws(WireViolation) {
                try handle(try decoded.get())
            } catch {
                stop(.protocolViolation(error.message))
            }
        }
        return true
    }

    func handle(_ message: RunnerMessage) throws(WireViolation) {
        switch message {
        case .hello(let major, let minor, let identifier):
            guard helloAt == nil else { throw WireViolation(message: "the extension sent a second hello") }
            helloAt = clock.now
            self.identifier = identifier
            abiVersion = "\(major).\(minor)"
            for (index, event) in events.enumerated() { send(event, id: UInt32(index + 1)) }
        case .loadFailed(let failure, let text):
            loadFailure = (failure, text)
        case .sandbox(let text):
            // The runner says it once, before loading the extension; another is the extension writing to the socket.
            guard sandbox == nil, helloAt == nil else { throw WireViolation(message: "the extension sent a sandbox report") }
            sandbox = text
        case .downloads(let eventID, let downloads):
            guard let index = currentEventIndex, eventID == UInt32(index + 1),
                case .contentRequest = events[index]
            else { throw WireViolation(message: "the extension returned a download outside downloads(for:…)") }
            guard returnedCount + downloads.count <= Self.maxReturnedDownloads else {
                throw WireViolation(message: "the extension returned more than \(Self.maxReturnedDownloads) downloads")
            }
            returnedCount += downloads.count
            if let onReturned {
                let began = clock.now
                onReturned(index, downloads)
                if terminateSentAt == nil { deadline += clock.now - began }
            } else {
                returned.append(contentsOf: downloads.map { (eventID, $0) })
            }
        case .answer(let eventID, let answer):
            guard let index = currentEventIndex, eventID == UInt32(index + 1), case .shouldDownload = events[index],
                answers[eventID] == nil
            else { throw WireViolation(message: "the extension answered a question nobody asked") }
            answers[eventID] = answer
        case .challengeAnswer(let eventID, let answer):
            // A reply may come after its entry point returned, but not before the entry point was called.
            guard eventID >= 1, eventID <= UInt32(completedEvents + 1), Int(eventID) <= events.count,
                case .challenge = events[Int(eventID) - 1], challengeAnswers[eventID] == nil
            else { throw WireViolation(message: "the extension answered a challenge nobody asked") }
            challengeAnswers[eventID] = answer
        case .fileLeft(let eventID):
            guard let index = currentEventIndex, eventID == UInt32(index + 1), case .downloadFinished = events[index] else {
                throw WireViolation(message: "the extension reported a file left behind outside backgroundDownload(_:finishedWithFileURL:)")
            }
            filesLeftBehind.insert(index)
        case .eventDone(let eventID):
            guard let index = currentEventIndex, eventID == UInt32(index + 1) else {
                throw WireViolation(message: "the extension reported an entry point return out of order")
            }
            completedEvents += 1
            deleteManifest(of: events[index])
        case .call(let id, let call):
            answer(call, id: id)
        case .log(let level, let text):
            let source: WindowLogLine.Source =
                switch UInt32(bitPattern: level) {
                case BA_LOG_DEBUG.rawValue: .debug
                case BA_LOG_WARNING.rawValue: .warning
                case BA_LOG_ERROR.rawValue: .error
                default: .info
                }
            record(source, text)
        case .violation(let text):
            throw WireViolation(message: text)
        case .runnerFailed(let text):
            // Whoever sent it, it is an account of the process's end, never a reason to keep less.
            if runnerFailure == nil { runnerFailure = text.printable(limit: 300) }
        case .terminateDone:
            guard terminateSentAt != nil else { throw WireViolation(message: "the extension reported a willTerminate nobody sent") }
            stop(.budgetExceeded(willTerminateReturned: true))
        }
    }

    /// Apple: the manifest "is read-only and will be deleted after this method returns".
    func deleteManifest(of event: WindowEvent) {
        if case .contentRequest(_, let manifestPath, _) = event { unlink(manifestPath) }
    }

    /// The event whose entry point is running (events run in order); nil when all are done or none started.
    var currentEventIndex: Int? {
        helloAt != nil && completedEvents < events.count ? completedEvents : nil
    }

    func send(_ event: WindowEvent, id: UInt32) {
        process.send(WirePacket.event(event, id: id))
    }

    // MARK: Host function calls

    func answer(_ call: HostCall, id: UInt32) {
        let noService = HostError(BA_ERROR_CALLER_CONNECTION_INVALID, "this window has no download service")
        switch call {
        case .schedule(let download):
            if let index = currentEventIndex, case .contentRequest = events[index] {
                reply(id, "scheduleDownload", download, .failure(HostError(
                    BA_ERROR_CALL_FROM_EXTENSION_NOT_ALLOWED,
                    "downloads cannot be scheduled inside downloads(for:manifestURL:extensionInfo:); return them")))
            } else {
                reply(id, "scheduleDownload", download, services?.schedule(download) ?? .failure(noService))
            }
        case .startForeground(let download):
            reply(id, "startForegroundDownload", download, .failure(HostError(
                BA_ERROR_CALL_FROM_EXTENSION_NOT_ALLOWED, "startForegroundDownload is for the app, not an extension")))
        case .cancel(let download):
            reply(id, "cancel", download, services?.cancel(download) ?? .failure(noService))
        case .fetchCurrentDownloads:
            switch services?.currentDownloads() ?? .failure(noService) {
            case .success(let downloads):
                for download in downloads { process.send(WirePacket.replyDownload(id, download)) }
                reply(id, "fetchCurrentDownloads", nil, .success(()))
            case .failure(let error):
                reply(id, "fetchCurrentDownloads", nil, .failure(error))
            }
        case .acquireExclusiveControl(let timeout):
            guard services != nil else { return reply(id, "withExclusiveControl", nil, .failure(noService)) }
            let until: ContinuousClock.Instant? = timeout < 0 ? nil : clock.now + .milliseconds(timeout)
            waitingForLock.append((id, until))
            grantExclusiveControl()
        case .releaseExclusiveControl:
            if holdsExclusiveControl {
                holdsExclusiveControl = false
                services?.releaseExclusiveControl()
            }
            reply(id, "releaseExclusiveControl", nil, .success(()))
            grantExclusiveControl()
        }
    }

    /// Gives the lock to the first waiting call when it is free; fails calls whose time ran out.
    func grantExclusiveControl() {
        guard let services, let first = waitingForLock.first else { return }
        if !holdsExclusiveControl {
            switch services.tryAcquireExclusiveControl() {
            case .success(true):
                holdsExclusiveControl = true
                waitingForLock.removeFirst()
                return reply(first.id, "withExclusiveControl", nil, .success(()))
            case .success(false):
                break
            case .failure(let error):
                waitingForLock.removeFirst()
                return reply(first.id, "withExclusiveControl", nil, .failure(error))
            }
        }
        let now = clock.now
        waitingForLock.removeAll { waiting in
            guard let until = waiting.until, now >= until else { return false }
            reply(waiting.id, "withExclusiveControl", nil, .failure(HostError(
                code: Int64(EWOULDBLOCK), domain: "NSPOSIXErrorDomain",
                message: "exclusive control is held by another process")))
            return true
        }
    }

    func reply(_ id: UInt32, _ function: String, _ download: Download?, _ result: Result<Void, HostError>) {
        if case .failure(let error) = result {
            refused.append(RefusedCall(function: function, identifier: download?.identifier, error: error))
        }
        process.send(WirePacket.reply(id, result))
    }

    // MARK: Output

    /// Reads what the process printed, up to a turn's worth; false once every writer has closed the pipe.
    func drainOutput() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        for _ in 0..<(Self.outputBytesPerTurn / chunk.count) {
            let count = chunk.withUnsafeMutableBytes { read(process.output, $0.baseAddress, $0.count) }
            if count < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
            if count == 0 { return false }
            for line in log.append(output: chunk.prefix(count), at: (clock.now - start).inSeconds) { onLog?(line) }
        }
        return true
    }

    func record(_ source: WindowLogLine.Source, _ text: String) {
        // Kept first: `onLog?(…)` would skip evaluating its argument when there is no `onLog`.
        let line = log.record(source, text, at: (clock.now - start).inSeconds)
        onLog?(line)
    }
}
