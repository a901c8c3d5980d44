import CBAExtension
import CHostSupport
import Foundation
import Vocabulary

/// The protocol of one extension window as a value: what each packet from the runner means in the window's state,
/// when `extensionWillTerminate` is due and when the kill, which host calls the window answers itself, what the
/// window keeps, and its stop reason. No I/O: the driver (`WindowLoop`) feeds it what happened (a message decoded,
/// the clock, the memory it sampled, the lock it tried, a host call's result) and carries out the `Action`s it
/// returns, in order. The model is async-http-client's `Transaction+StateMachine`.
struct WindowProtocol {
    /// What the driver does next.
    enum Action {
        /// The runner said hello: send every event, numbered from 1.
        case sendEvents
        case sendWillTerminate
        case sendEnd
        /// Answer a host call (a refusal is already counted in the report).
        case reply(id: UInt32, Result<Void, HostError>)
        /// A host call only the host's services answer; the driver hands the result to `performed`.
        case perform(id: UInt32, HostCall)
        /// What a content request returned, for the caller that takes it as it arrives; the driver reports the time
        /// it took with `hostTook`.
        case deliver(eventIndex: Int, [Download])
        /// Apple deletes a content request's manifest once its entry point returned.
        case deleteManifest(eventIndex: Int)
        case log(WindowLogLine.Source, String)
        /// Kill the window's processes now.
        case kill
        /// Try the app's exclusive-control lock for the first waiting call; the driver hands the result to
        /// `lockTried`.
        case tryLock
        case releaseLock
    }

    /// One reading of the window's memory.
    struct MemorySample {
        var residentBytes: Int64
        /// The kernel killed a process of the window at its cgroup's ceiling; the cgroup's peak, when it says.
        var killedByTheKernel: Bool
        var cgroupPeakBytes: Int64?
    }

    /// The resident memory sampling period: the longest an extension can allocate unseen.
    static let samplingPeriod = Duration.milliseconds(5)
    /// What the host keeps of one window's returned downloads; past it the window stops.
    static let maxReturnedDownloads = 100_000

    let events: [WindowEvent]
    let limits: WindowLimits
    let start: ContinuousClock.Instant
    /// Whether a caller takes returned downloads as they arrive (`deliver`), rather than the outcome holding them.
    let streamsReturned: Bool
    /// Whether the window has the host's services (downloads, the lock); without them, their calls fail with 56.
    let hasServices: Bool

    /// Where the window is in its life. Every rule about what may happen next reads it.
    enum Phase: Equatable {
        /// Spawned: the runner has not said hello. The budget counts already.
        case starting
        /// The runner said hello: the entry points run, one event after another.
        case running
        /// Every entry point returned: END is sent, and the runner exits, or is killed at `killAt`.
        case ending(killAt: ContinuousClock.Instant)
        /// The budget ran out: willTerminate is sent, and the runner is killed at `killAt`.
        case terminating(killAt: ContinuousClock.Instant)
        /// The window stopped it, for this reason, and sent the kill.
        case stopped(StopReason)
    }

    private(set) var phase = Phase.starting
    private(set) var deadline: ContinuousClock.Instant
    /// What the report says of the window's life, whatever its phase now.
    private(set) var helloAt: ContinuousClock.Instant?
    private(set) var identifier: String?
    private(set) var abiVersion: String?
    private(set) var sandbox: String?
    private(set) var completedEvents = 0
    private var loadFailure: (LoadFailure, String)?
    /// The runner's own report that it failed, which the window's end blames on the runner.
    private var runnerFailure: String?
    private var returnedCount = 0
    /// What content requests added, with the event that added them (when not streamed).
    private var returned: [(eventID: UInt32, download: Download)] = []
    /// What `shouldDownload(_:)` answered, by event.
    private var answers: [UInt32: Bool] = [:]
    /// How challenges were answered, by event; the window waits for every one.
    private var challengeAnswers: [UInt32: ChallengeAnswer] = [:]
    private let challengeEvents: Int
    private var filesLeftBehind: Set<Int> = []
    private(set) var refused: [RefusedCall] = []
    private(set) var peakResident: Int64 = 0
    /// When the memory was last read: once a sampling period at most, however many packets a turn reads.
    private var sampledAt: ContinuousClock.Instant?
    private(set) var terminateSentAt: ContinuousClock.Instant?
    private(set) var killSentAt: ContinuousClock.Instant?
    private(set) var holdsExclusiveControl = false
    /// Acquire calls waiting for the lock: call id and until when (nil: as long as the window lasts).
    private var waitingForLock: [(id: UInt32, until: ContinuousClock.Instant?)] = []

    init(
        events: [WindowEvent], limits: WindowLimits, start: ContinuousClock.Instant, streamsReturned: Bool,
        hasServices: Bool
    ) {
        self.events = events
        self.limits = limits
        self.start = start
        self.streamsReturned = streamsReturned
        self.hasServices = hasServices
        challengeEvents = events.count { if case .challenge = $0 { true } else { false } }
        deadline = start + limits.budget
    }

    /// Why the window stopped it, once it did.
    var stopReason: StopReason? {
        if case .stopped(let reason) = phase { reason } else { nil }
    }

    /// Whether the budget's deadline still counts: neither END nor willTerminate was sent, and the window runs.
    private var deadlineCounts: Bool {
        switch phase {
        case .starting, .running: true
        case .ending, .terminating, .stopped: false
        }
    }

    /// When the runner is to be killed, once END or willTerminate was sent.
    private var killAt: ContinuousClock.Instant? {
        switch phase {
        case .ending(let killAt), .terminating(let killAt): killAt
        case .starting, .running, .stopped: nil
        }
    }

    /// The event whose entry point is running (events run in order); nil when all are done or none started.
    var currentEventIndex: Int? {
        helloAt != nil && completedEvents < events.count ? completedEvents : nil
    }

    // MARK: Messages

    /// A packet from the runner, decoded (or the violation its bytes were). After the window stopped, nothing.
    mutating func receive(_ message: Result<RunnerMessage, WireViolation>, at now: ContinuousClock.Instant) -> [Action] {
        guard stopReason == nil else { return [] }
        do {
            return try handle(try message.get(), at: now)
        } catch {
            return stop(.protocolViolation(error.message), at: now)
        }
    }

    private mutating func handle(_ message: RunnerMessage, at now: ContinuousClock.Instant) throws(WireViolation)
        -> [Action]
    {
        switch message {
        case .hello(let major, let minor, let identifier):
            guard helloAt == nil else { throw WireViolation(message: "the extension sent a second hello") }
            helloAt = now
            if phase == .starting { phase = .running }
            self.identifier = identifier
            abiVersion = "\(major).\(minor)"
            return [.sendEvents]
        case .loadFailed(let failure, let text):
            loadFailure = (failure, text)
        case .sandbox(let text):
            // The runner says it once, before loading the extension; another is the extension writing to the socket.
            guard sandbox == nil, helloAt == nil else { throw WireViolation(message: "the extension sent a sandbox report") }
            sandbox = text
        case .downloads(let eventID, let downloads):
            guard let index = currentEventIndex, eventID == UInt32(index + 1), case .contentRequest = events[index]
            else { throw WireViolation(message: "the extension returned a download outside downloads(for:…)") }
            guard returnedCount + downloads.count <= Self.maxReturnedDownloads else {
                throw WireViolation(message: "the extension returned more than \(Self.maxReturnedDownloads) downloads")
            }
            returnedCount += downloads.count
            if streamsReturned { return [.deliver(eventIndex: index, downloads)] }
            returned.append(contentsOf: downloads.map { (eventID, $0) })
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
            return [.deleteManifest(eventIndex: index)]
        case .call(let id, let call):
            return self.call(call, id: id, at: now)
        case .log(let messages):
            return messages.map { level, text in
                let source: WindowLogLine.Source =
                    switch UInt32(bitPattern: level) {
                    case BA_LOG_DEBUG.rawValue: .debug
                    case BA_LOG_WARNING.rawValue: .warning
                    case BA_LOG_ERROR.rawValue: .error
                    default: .info
                    }
                return .log(source, text)
            }
        case .violation(let text):
            throw WireViolation(message: text)
        case .runnerFailed(let text):
            // Whoever sent it, it is an account of the process's end, never a reason to keep less.
            if runnerFailure == nil { runnerFailure = text.printable(limit: 300) }
        case .terminateDone:
            guard case .terminating = phase else {
                throw WireViolation(message: "the extension reported a willTerminate nobody sent")
            }
            return stop(.budgetExceeded(willTerminateReturned: true), at: now)
        }
        return []
    }

    /// The time the caller took with what a content request returned: the host's, not the extension's, so the
    /// budget's deadline moves by it.
    mutating func hostTook(_ duration: Duration) {
        if terminateSentAt == nil { deadline += duration }
    }

    // MARK: Host function calls

    private static let noService = HostError(BA_ERROR_CALLER_CONNECTION_INVALID, "this window has no download service")

    private mutating func call(_ call: HostCall, id: UInt32, at now: ContinuousClock.Instant) -> [Action] {
        switch call {
        case .schedule:
            if let index = currentEventIndex, case .contentRequest = events[index] {
                return performed(id: id, call, .failure(HostError(
                    BA_ERROR_CALL_FROM_EXTENSION_NOT_ALLOWED,
                    "downloads cannot be scheduled inside downloads(for:manifestURL:extensionInfo:); return them")))
            }
            return hasServices ? [.perform(id: id, call)] : performed(id: id, call, .failure(Self.noService))
        case .startForeground:
            return performed(id: id, call, .failure(HostError(
                BA_ERROR_CALL_FROM_EXTENSION_NOT_ALLOWED, "startForegroundDownload is for the app, not an extension")))
        case .cancel, .fetchCurrentDownloads:
            return hasServices ? [.perform(id: id, call)] : performed(id: id, call, .failure(Self.noService))
        case .acquireExclusiveControl(let timeout):
            guard hasServices else { return performed(id: id, call, .failure(Self.noService)) }
            waitingForLock.append((id, timeout < 0 ? nil : now + .milliseconds(timeout)))
            return lockStep(at: now)
        case .releaseExclusiveControl:
            var actions: [Action] = []
            if holdsExclusiveControl {
                holdsExclusiveControl = false
                actions.append(.releaseLock)
            }
            return actions + performed(id: id, call, .success(())) + lockStep(at: now)
        }
    }

    /// How a host call ended: its reply (a failure counts among the report's refused calls).
    mutating func performed(id: UInt32, _ call: HostCall, _ result: Result<Void, HostError>) -> [Action] {
        reply(id: id, function: call.appleName, download: call.download, result)
    }

    private mutating func reply(
        id: UInt32, function: String, download: Download?, _ result: Result<Void, HostError>
    ) -> [Action] {
        if case .failure(let error) = result {
            refused.append(RefusedCall(function: function, identifier: download?.identifier, error: error))
        }
        return [.reply(id: id, result)]
    }

    /// The answer to a waiting `withExclusiveControl`.
    private mutating func lockReply(id: UInt32, _ result: Result<Void, HostError>) -> [Action] {
        reply(id: id, function: "withExclusiveControl", download: nil, result)
    }

    // MARK: Exclusive control

    /// Tries the lock for the first waiting call when it is free; fails calls whose time ran out.
    mutating func lockStep(at now: ContinuousClock.Instant) -> [Action] {
        guard hasServices, !waitingForLock.isEmpty else { return [] }
        return holdsExclusiveControl ? expireLockWaits(at: now) : [.tryLock]
    }

    /// What trying the lock gave.
    mutating func lockTried(_ result: Result<Bool, HostError>, at now: ContinuousClock.Instant) -> [Action] {
        guard let first = waitingForLock.first else { return [] }
        switch result {
        case .success(true):
            holdsExclusiveControl = true
            waitingForLock.removeFirst()
            return lockReply(id: first.id, .success(()))
        case .success(false):
            return expireLockWaits(at: now)
        case .failure(let error):
            waitingForLock.removeFirst()
            return lockReply(id: first.id, .failure(error))
        }
    }

    private mutating func expireLockWaits(at now: ContinuousClock.Instant) -> [Action] {
        let expired = waitingForLock.filter { waiting in waiting.until.map { now >= $0 } ?? false }
        waitingForLock.removeAll { waiting in waiting.until.map { now >= $0 } ?? false }
        return expired.flatMap { waiting in
            lockReply(id: waiting.id, .failure(HostError(
                code: Int64(EWOULDBLOCK), domain: "NSPOSIXErrorDomain", message: "exclusive control is held by another process")))
        }
    }

    // MARK: Deadlines and limits

    /// When the driver must look again, whatever arrives: the next sample, the deadline, the kill.
    func nextWakeUp(after now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        var next = now + Self.samplingPeriod
        if deadlineCounts { next = min(next, deadline) }
        if let killAt { next = min(next, killAt) }
        return next
    }

    /// Whether the memory is due to be read.
    func wantsSample(at now: ContinuousClock.Instant) -> Bool {
        sampledAt.map { now - $0 >= Self.samplingPeriod } ?? true
    }

    /// A turn of the clock, with the memory when `wantsSample` said so: the memory limit, the deadline, the kill.
    mutating func tick(at now: ContinuousClock.Instant, memory: MemorySample?) -> [Action] {
        if let memory {
            sampledAt = now
            peakResident = max(peakResident, memory.residentBytes, memory.cgroupPeakBytes ?? 0)
            if (memory.residentBytes > limits.memoryBytes || memory.killedByTheKernel) && stopReason == nil {
                return stop(.killedForMemory(limitBytes: limits.memoryBytes), at: now)
            }
        }
        var actions: [Action] = []
        if deadlineCounts && now >= deadline {
            terminateSentAt = now
            phase = .terminating(killAt: now + limits.grace)
            actions.append(.sendWillTerminate)
        }
        switch phase {
        case .ending(let killAt) where now >= killAt:
            // After END the runner exits at once; one that does not is killed, and the window still returned.
            actions += stop(.returned, at: now)
        case .terminating(let killAt) where now >= killAt:
            actions += stop(.budgetExceeded(willTerminateReturned: false), at: now)
        default:
            break
        }
        return actions
    }

    /// Ends the window once every entry point returned, every challenge is answered and the lock is given back.
    mutating func endIfDone(at now: ContinuousClock.Instant) -> [Action] {
        guard phase == .running, completedEvents == events.count, challengeAnswers.count == challengeEvents,
            !holdsExclusiveControl, waitingForLock.isEmpty
        else { return [] }
        phase = .ending(killAt: now + limits.grace)
        return [.sendEnd]
    }

    private mutating func stop(_ reason: StopReason, at now: ContinuousClock.Instant) -> [Action] {
        if stopReason == nil {
            phase = .stopped(reason)
            killSentAt = now
        }
        return [.kill]
    }

    // MARK: The end

    /// Why the window ended, given how its process did; a reason the window stopped it for comes first.
    func reason(exitStatus status: Int32, killedByTheKernelForMemory: Bool) -> StopReason {
        if let stopReason { return stopReason }
        if let (failure, message) = loadFailure { return .refusedToLoad(failure, message) }
        if killedByTheKernelForMemory { return .killedForMemory(limitBytes: limits.memoryBytes) }
        if let runnerFailure { return .runnerFailed(runnerFailure) }
        if case .ending = phase { return .returned }
        if bahost_signaled(status) != 0 { return .crashed(signal: bahost_signal(status)) }
        return .exited(code: bahost_exit_code(status))
    }

    /// The window's outcome: Apple schedules what `downloads(for:)` returned only from calls that returned, and
    /// nothing at all from an extension that broke the protocol.
    func outcome(
        reason: StopReason, elapsed: Duration, peakResidentBytes: Int64, log: [WindowLogLine]
    ) -> WindowOutcome {
        let broke = if case .protocolViolation = reason { true } else { false }
        let kept = broke ? [] : returned.filter { $0.eventID <= UInt32(completedEvents) }.map(\.download)
        var packAnswers: [String: Bool] = [:]
        if !broke {
            for (eventID, answer) in answers where eventID <= UInt32(completedEvents) {
                if case .shouldDownload(let offer) = events[Int(eventID) - 1] { packAnswers[offer.id] = answer }
            }
        }
        var outcome = WindowOutcome(
            stopReason: reason, elapsed: elapsed, activation: helloAt.map { $0 - start },
            extensionIdentifier: identifier, abiVersion: abiVersion, sandbox: sandbox, returnedDownloads: kept,
            completedEvents: completedEvents, willTerminateSentAt: terminateSentAt.map { ($0 - start).inSeconds },
            killSentAt: killSentAt.map { ($0 - start).inSeconds },
            refusedCalls: refused, log: log, peakResidentBytes: peakResidentBytes)
        outcome.assetPackAnswers = packAnswers
        if !broke {
            outcome.challengeAnswers = Dictionary(uniqueKeysWithValues: challengeAnswers.map { (Int($0.key) - 1, $0.value) })
        }
        outcome.filesLeftBehind = filesLeftBehind
        return outcome
    }
}

extension HostCall {
    /// The name of Apple's method, for the report's refused calls.
    var appleName: String {
        switch self {
        case .schedule: "scheduleDownload"
        case .startForeground: "startForegroundDownload"
        case .cancel: "cancel"
        case .fetchCurrentDownloads: "fetchCurrentDownloads"
        case .acquireExclusiveControl: "withExclusiveControl"
        case .releaseExclusiveControl: "releaseExclusiveControl"
        }
    }

    /// The download the call names, if it names one.
    var download: Download? {
        switch self {
        case .schedule(let download), .startForeground(let download), .cancel(let download): download
        default: nil
        }
    }
}
