import CBAExtension
import Vocabulary

/// One entry-point call the host asks the window to make, in order.
public enum WindowEvent: Sendable {
    /// `downloads(for:manifestURL:extensionInfo:)`. The window deletes the manifest file when the entry point
    /// returns (Apple's rule), or when the window ends: hand it a copy the extension may lose.
    case contentRequest(ContentRequest, manifestPath: String, info: AppExtensionInfo)
    /// `backgroundDownload(_:failedWithError:)`. The runner removes `ticket`, if any, once the entry point returned
    /// (the delivery's proof that it did: `DeliveryClaim`).
    case downloadFailed(Download, HostError, ticket: String? = nil)
    /// `backgroundDownload(_:finishedWithFileURL:)`. The runner deletes the file, if still there, once the entry
    /// point returned (Apple: it "must be moved before this method exits scope").
    case downloadFinished(Download, filePath: String)
    /// `ManagedDownloaderExtension.shouldDownload(_:)` (ABI 1.1): whether the host may download this pack on its
    /// own.
    case shouldDownload(AssetPackInfo)
    /// `backgroundDownload(_:didReceive:)`: a server asked for credentials for `Download`. The window stays open
    /// until the extension answers (or its budget ends).
    case challenge(Download, AuthenticationChallenge)

    /// A completion's callback: its file, or its error with its ticket.
    public static func completion(_ completion: Completion) -> WindowEvent {
        switch completion.result {
        case .finished(let filePath): .downloadFinished(completion.download, filePath: filePath)
        case .failed(let error, let ticket): .downloadFailed(completion.download, error, ticket: ticket)
        }
    }
}

/// How a window ended. Every window ends with exactly one.
public enum StopReason: Sendable, Hashable {
    /// Every entry point returned (and any exclusive control was released).
    case returned
    /// The budget ran out. `willTerminateReturned` says whether `extensionWillTerminate` returned within the grace
    /// period; either way the process was then killed.
    case budgetExceeded(willTerminateReturned: Bool)
    /// The process died of a signal it did not get from the host.
    case crashed(signal: Int32)
    /// The process exited on its own before its entry points were done.
    case exited(code: Int32)
    /// The resident memory of the window's processes, together, went over the limit; the host killed the window
    /// (or the kernel did, at the ceiling of the window's cgroup).
    case killedForMemory(limitBytes: Int64)
    /// The runner could not load the extension.
    case refusedToLoad(LoadFailure, String)
    /// The extension broke the protocol (garbage returned); the host killed it and kept nothing from it.
    case protocolViolation(String)
    /// The runner itself failed, not the extension (its own words); what entry points had returned is kept.
    case runnerFailed(String)

    /// A stable name for scripts (`--json`).
    public var kind: String {
        switch self {
        case .returned: "returned"
        case .budgetExceeded: "budget-exceeded"
        case .crashed: "crashed"
        case .exited: "exited"
        case .killedForMemory: "killed-for-memory"
        case .refusedToLoad: "refused-to-load"
        case .protocolViolation: "protocol-violation"
        case .runnerFailed: "runner-failed"
        }
    }

    /// The reason in plain words.
    public var summary: String {
        switch self {
        case .returned:
            "returned: every entry point finished"
        case .budgetExceeded(let returned):
            returned
                ? "budget exceeded: extensionWillTerminate was delivered and returned; the process was then killed"
                : "budget exceeded: extensionWillTerminate did not return within the grace period; the process was killed"
        case .crashed(let signal):
            "crashed: killed by signal \(signal) (\(signalName(signal)))"
        case .exited(let code):
            "exited: the extension ended its process with exit code \(code) before its entry points returned"
        case .killedForMemory(let limit):
            "killed for memory: the window's resident memory (its processes together) went over the limit of "
                + "\(limit >> 20) MiB"
        case .refusedToLoad(let failure, let message):
            "refused to load (\(failure.rawValue)): \(message)"
        case .protocolViolation(let message):
            "protocol violation: \(message)"
        case .runnerFailed(let message):
            "the host's runner failed (not the extension): \(message)"
        }
    }
}

private func signalName(_ signal: Int32) -> String {
    let names: [Int32: String] = [
        4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV",
        13: "SIGPIPE", 15: "SIGTERM",
    ]
    return names[signal] ?? "signal \(signal)"
}

/// A host function call the host refused, with Apple's error.
public struct RefusedCall: Sendable, Hashable, Codable {
    public var function: String
    public var identifier: String?
    public var error: HostError
}

/// One line the window produced: the extension's own log through the host, or what its process printed.
public struct WindowLogLine: Sendable, Hashable, Codable {
    public enum Source: String, Sendable, Codable {
        case debug, info, warning, error
        /// Printed on the process's stdout or stderr.
        case output
    }

    public var source: Source
    public var message: String
    /// Seconds since the window opened.
    public var at: Double
}

/// Everything a window did.
public struct WindowOutcome: Sendable {
    public var stopReason: StopReason
    /// Wall time from spawn to the process's end.
    public var elapsed: Duration
    /// Time from spawn to the extension's init having returned (the runner's hello); nil if it never loaded.
    public var activation: Duration?
    public var extensionIdentifier: String?
    /// The ABI version the extension was built against, "major.minor".
    public var abiVersion: String?
    /// What the window's sandbox applied, and what the machine could not give (the runner's own words); nil when
    /// the runner never said, which only an old runner does.
    public var sandbox: String?
    /// What content requests returned, in the order the extension added them: only from requests whose entry point
    /// returned, and nothing after a protocol violation.
    public var returnedDownloads: [Download]
    /// What `shouldDownload(_:)` returned, by pack ID: only from calls that returned. A pack missing here gets
    /// Apple's default (download it).
    public var assetPackAnswers: [String: Bool] = [:]
    /// How the extension answered challenges, by the index of their event; one it never answered is missing.
    public var challengeAnswers: [Int: ChallengeAnswer] = [:]
    /// The indexes of `downloadFinished` events whose file was still where the host put it when the entry point
    /// returned: the extension did not move it (the runner deleted it, as Apple does).
    public var filesLeftBehind: Set<Int> = []
    /// Entry points that returned.
    public var completedEvents: Int
    /// Seconds after opening at which `extensionWillTerminate` was sent, if it was.
    public var willTerminateSentAt: Double?
    /// Seconds after opening at which the host killed the process, if it had to (a deadline, or a limit).
    public var killSentAt: Double?
    public var refusedCalls: [RefusedCall]
    public var log: [WindowLogLine]
    /// Peak resident memory of the window's processes together (the cgroup's peak when the kernel stopped it).
    public var peakResidentBytes: Int64
}
