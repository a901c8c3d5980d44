import ExtensionRuntime
import Foundation
import Lifecycle
import Queue
import Synchronization

/// Shows a life cycle as it happens: for people, a line per event and a progress bar on a terminal; for scripts
/// (`--json`), one JSON object per line: window, queued, rejected, began, progress, paused, finished, failed,
/// delivered, abandoned, appMayLaunch, manifest, and a closing summary.
final class EventReporter: Sendable {
    private let json: Bool
    private let progressBar: Bool
    private let start = ContinuousClock.now
    private let state = Mutex(State())

    private struct State {
        var finished = 0
        var failed = 0
        var rejected = 0
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
        switch event {
        case .manifestFetched(let bytes):
            emit(["event": "manifest", "bytes": bytes], "manifest fetched (\(bytes) bytes)")
        case .manifestWaiting(let error, let delay):
            emit(
                ["event": "manifestWaiting", "error": Self.json(error), "retryInSeconds": delay.inSeconds],
                String(format: "manifest: trying again in %.1f s after: %@", delay.inSeconds, error.description))
        case .manifestFailed(let error):
            state.withLock { $0.manifestFailed = true }
            emit(["event": "manifestFailed", "error": Self.json(error)], "manifest failed: \(error)")
        case .window(let purpose, let outcome):
            let name: String
            switch purpose {
            case .contentRequest(let request): name = "\(request.name) content request"
            case .completions(let count): name = "delivery of \(count) completion\(count == 1 ? "" : "s")"
            }
            var object = Self.windowJSON(outcome)
            object["event"] = "window"
            object["purpose"] = name
            let ms = String(format: "%.1f ms", outcome.elapsed.inSeconds * 1000)
            var text = "extension window (\(name)): \(outcome.stopReason.summary) [\(ms)]"
            for line in outcome.log { text += "\n    [\(line.source.rawValue)] \(line.message)" }
            emit(object, text)
        case .rejected(let download, let error):
            state.withLock { $0.rejected += 1 }
            emit(
                ["event": "rejected", "identifier": download.identifier, "url": download.url ?? "", "error": Self.json(error)],
                "rejected \(download.identifier): \(error)")
        case .queued(let queued):
            let essential = queued.isEssential ? ", essential" : ""
            emit(
                Self.downloadJSON("queued", queued),
                "queued \(queued.identifier) (\(Self.size(queued.download.fileSize))\(essential), priority \(queued.priority))")
        case .began(let queued, let offset):
            state.withLock { $0.active[queued.uniqueIdentifier] = (offset, queued.download.fileSize) }
            var object = Self.downloadJSON("began", queued)
            object["resumingAt"] = offset
            emit(object, offset > 0 ? "resumed \(queued.identifier) at \(Self.size(offset))" : "began \(queued.identifier)")
        case .progress(let queued, let received, let expected):
            let due = state.withLock { state -> Bool in
                state.active[queued.uniqueIdentifier] = (received, expected)
                guard ContinuousClock.now - state.lastProgressLine >= .milliseconds(250) else { return false }
                state.lastProgressLine = .now
                return true
            }
            if json && due {
                var object = Self.downloadJSON("progress", queued)
                object["received"] = received
                object["expected"] = expected
                emit(object, nil)
            }
            if progressBar && due { drawBar() }
        case .paused(let queued, let network, let until, let error):
            state.withLock { _ = $0.active.removeValue(forKey: queued.uniqueIdentifier) }
            var object = Self.downloadJSON("paused", queued)
            object["reason"] = network ? "waitingForNetwork" : "waitingToRetry"
            object["retryInSeconds"] = max(0, until.timeIntervalSinceNow)
            object["error"] = Self.json(error)
            let wait = String(format: "%.1f s", max(0, until.timeIntervalSinceNow))
            emit(object, "paused \(queued.identifier), \(network ? "waiting for the network" : "waiting to retry") (\(wait)): \(error)")
        case .finished(let queued):
            state.withLock {
                $0.finished += 1
                $0.bytes += queued.bytesReceived
                $0.active.removeValue(forKey: queued.uniqueIdentifier)
            }
            var object = Self.downloadJSON("finished", queued)
            object["bytes"] = queued.bytesReceived
            object["path"] = queued.filePath ?? ""
            emit(object, "finished \(queued.identifier) (\(Self.size(queued.bytesReceived)))")
        case .failed(let queued, let error):
            state.withLock {
                $0.failed += 1
                $0.active.removeValue(forKey: queued.uniqueIdentifier)
            }
            var object = Self.downloadJSON("failed", queued)
            object["error"] = Self.json(error)
            emit(object, "failed \(queued.identifier): \(error)")
        case .delivered(let queued):
            emit(Self.downloadJSON("delivered", queued), "delivered \(queued.identifier) to the extension")
        case .abandoned(let queued):
            emit(Self.downloadJSON("abandoned", queued), "gave up delivering \(queued.identifier): its callback never returned")
        case .appMayLaunch(let app):
            let at = ContinuousClock.now - start
            state.withLock { $0.appMayLaunchAt = at }
            emit(
                ["event": "appMayLaunch", "app": app, "atSeconds": at.inSeconds],
                String(format: "the app may launch now (%.3f s)", at.inSeconds))
        case .queueFailed(let message):
            emit(["event": "queueFailed", "message": message], "the queue failed: \(message)")
        }
    }

    /// Prints the summary; returns the exit status.
    func finish(contentRequest outcome: WindowOutcome?) -> Int32 {
        let s = state.withLock { $0 }
        let elapsed = (ContinuousClock.now - start).inSeconds
        var status: Int32 = s.failed + s.rejected > 0 ? 2 : 0
        if s.manifestFailed { status = 9 }
        if let outcome, outcome.stopReason != .returned {
            status = Report.exitCode(for: outcome.stopReason, rejected: false)
        }
        var object: [String: Any] = [
            "event": "summary", "finished": s.finished, "failed": s.failed, "rejected": s.rejected, "bytes": s.bytes,
            "elapsedSeconds": elapsed, "exitCode": status,
        ]
        if let at = s.appMayLaunchAt { object["appMayLaunchAtSeconds"] = at.inSeconds }
        emit(
            object,
            String(
                format: "done in %.2f s: %d finished (%.1f MiB), %d failed, %d rejected", elapsed, s.finished,
                Double(s.bytes) / 1_048_576, s.failed, s.rejected))
        return status
    }

    private func emit(_ object: [String: Any], _ text: String?) {
        if json {
            guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            else { return }
            FileHandle.standardOutput.write(data + Data("\n".utf8))
            return
        }
        guard let text else { return }
        if progressBar { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
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
        FileHandle.standardError.write(Data(line.utf8))
    }

    static func size(_ bytes: Int64) -> String {
        bytes == 0 ? "size unknown" : String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }

    static func json(_ error: HostError) -> [String: Any] {
        ["code": error.code, "domain": error.domain, "message": error.message]
    }

    static func downloadJSON(_ event: String, _ queued: QueuedDownload) -> [String: Any] {
        [
            "event": event, "identifier": queued.identifier, "uniqueIdentifier": queued.uniqueIdentifier,
            "url": queued.download.url ?? "", "essential": queued.isEssential, "fileSize": queued.download.fileSize,
        ]
    }

    static func windowJSON(_ outcome: WindowOutcome) -> [String: Any] {
        var object: [String: Any] = [
            "stopReason": ["kind": outcome.stopReason.kind, "summary": outcome.stopReason.summary],
            "elapsedSeconds": outcome.elapsed.inSeconds, "completedEntryPoints": outcome.completedEvents,
            "log": outcome.log.map { ["source": $0.source.rawValue, "message": $0.message, "at": $0.at] },
            "refusedCalls": outcome.refusedCalls.map {
                ["function": $0.function, "identifier": $0.identifier ?? "", "error": json($0.error)]
            },
        ]
        if let identifier = outcome.extensionIdentifier { object["extensionIdentifier"] = identifier }
        return object
    }
}
