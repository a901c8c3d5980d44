import ExtensionRuntime
import Foundation
import Engine
import Synchronization
import Vocabulary

/// Shows a life cycle as it happens: for people, a line per event and a progress bar on a terminal; for scripts
/// (`--json`), one JSON object per line: window, queued, rejected, began, progress, paused, finished, failed,
/// delivered, abandoned, deliveryFailed, deliveriesLeftPending, appMayLaunch, manifest, and a closing summary.
final class EventReporter: Sendable {
    private let json: Bool
    private let progressBar: Bool
    private let start = ContinuousClock.now
    private let state = Mutex(State())

    private struct State {
        var finished = 0
        var failed = 0
        var rejected = 0
        /// Completions left pending because their deliveries kept failing.
        var undelivered = 0
        var bytes: Int64 = 0
        var manifestFailed = false
        var appMayLaunchAt: Duration?
        var active: [String: (received: Int64, expected: Int64)] = [:]
        var lastProgressLine = ContinuousClock.now - .seconds(1)
        var barShown = false
    }

    init(json: Bool) {
        self.json = json
        progressBar = !json && isatty(STDERR_FILENO) != 0
    }

    func observe(_ event: LifecycleEvent) {
        // Made only for what is shown (most progress events are not), and once.
        lazy var line = event.line
        switch event {
        case .manifestFailed:
            state.withLock { $0.manifestFailed = true }
        case .rejected:
            state.withLock { $0.rejected += 1 }
        case .began(let queued, let offset):
            state.withLock { $0.active[queued.uniqueIdentifier] = (offset, queued.download.fileSize) }
        case .progress(let queued, let received, let expected):
            let due = state.withLock { state -> Bool in
                state.active[queued.uniqueIdentifier] = (received, expected)
                guard ContinuousClock.now - state.lastProgressLine >= .milliseconds(250) else { return false }
                state.lastProgressLine = .now
                return true
            }
            if json && due { emit(line) }
            if progressBar && due { drawBar() }
            return
        case .paused(let queued, _, _, _):
            state.withLock { _ = $0.active.removeValue(forKey: queued.uniqueIdentifier) }
        case .finished(let queued):
            state.withLock {
                $0.finished += 1
                $0.bytes += queued.bytesReceived
                $0.active.removeValue(forKey: queued.uniqueIdentifier)
            }
        case .failed(let queued, _):
            state.withLock {
                $0.failed += 1
                $0.active.removeValue(forKey: queued.uniqueIdentifier)
            }
        case .deliveriesLeftPending(_, let count, _):
            state.withLock { $0.undelivered += count }
        case .appMayLaunch:
            let at = ContinuousClock.now - start
            state.withLock { $0.appMayLaunchAt = at }
            emit(EventLine(
                json: line.json.merging(["atSeconds": at.inSeconds]) { _, added in added },
                text: String(format: "the app may launch now (%.3f s)", at.inSeconds)))
            return
        default:
            break
        }
        emit(line)
    }

    /// Prints the summary; returns the exit status.
    func finish(contentRequest outcome: WindowOutcome?) -> Int32 {
        let s = state.withLock { $0 }
        let elapsed = (ContinuousClock.now - start).inSeconds
        var status: Int32 = s.failed + s.rejected > 0 ? 2 : 0
        if s.undelivered > 0 { status = 75 }
        if s.manifestFailed { status = 9 }
        if let outcome, outcome.stopReason != .returned {
            status = Report.exitCode(for: outcome.stopReason, rejected: false)
        }
        var object: [String: Any] = [
            "event": "summary", "finished": s.finished, "failed": s.failed, "rejected": s.rejected,
            "undelivered": s.undelivered, "bytes": s.bytes, "elapsedSeconds": elapsed, "exitCode": status,
        ]
        if let at = s.appMayLaunchAt { object["appMayLaunchAtSeconds"] = at.inSeconds }
        emit(EventLine(
            json: object,
            text: String(
                format: "done in %.2f s: %d finished (%.1f MiB), %d failed, %d rejected", elapsed, s.finished,
                Double(s.bytes) / 1_048_576, s.failed, s.rejected)
                + (s.undelivered > 0 ? ", \(s.undelivered) not delivered" : "")))
        return status
    }

    /// Prints the line as JSON with `--json`, else its text (if it has one).
    private func emit(_ line: EventLine) {
        if json {
            Output.standardOutput(line.jsonText + "\n")
            return
        }
        guard let text = line.text else { return }
        if progressBar { Output.standardError("\r\u{1B}[K") }
        Output.standardOutput(text + "\n")
        if progressBar { drawBar() }
    }

    private func drawBar() {
        let (active, received, expected) = state.withLock { state in
            (state.active.count, state.active.values.reduce(0) { $0 + $1.received }, state.active.values.reduce(0) { $0 + $1.expected })
        }
        guard active > 0 else { return }
        let fraction = expected > 0 ? min(1, Double(received) / Double(expected)) : 0
        let filled = Int(fraction * 30)
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled)
        let line = String(
            format: "\r\u{1B}[K[%@] %3.0f%% %@ of %@, %d active", bar, fraction * 100, Self.size(received),
            expected > 0 ? Self.size(expected) : "?", active)
        Output.standardError(line)
    }

    static func size(_ bytes: Int64) -> String { LifecycleEvent.size(bytes) }
}
