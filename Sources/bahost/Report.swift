import ExtensionRuntime
import Foundation
import Vocabulary

/// What `bahost run` prints: a report for people, or one JSON object for scripts.
struct Report {
    let plugin: String
    let request: ContentRequest
    let outcome: WindowOutcome
    let returned: [Download]
    let rejected: [RejectedDownload]
    let scheduled: [Download]

    var exitCode: Int32 { Self.exitCode(for: outcome.stopReason, rejected: !rejected.isEmpty) }

    /// The exit status for how the content request's window ended (see `bahost run --help`).
    static func exitCode(for reason: StopReason, rejected: Bool) -> Int32 {
        switch reason {
        case .returned: rejected ? 2 : 0
        case .budgetExceeded: 3
        case .crashed: 4
        case .exited: 5
        case .killedForMemory: 6
        case .refusedToLoad: 7
        case .protocolViolation: 8
        case .runnerFailed: 70
        }
    }

    static func printLive(_ line: WindowLogLine) {
        Output.standardError("  [\(line.source.rawValue)] \(line.message.printable())\n")
    }

    func printText() {
        var out = ""
        let name = outcome.extensionIdentifier.map { " (\($0), ABI \(outcome.abiVersion ?? "?"))" } ?? ""
        out += "\((plugin as NSString).lastPathComponent)\(name): \(request.name) content request\n"
        out += "  stop reason: \(outcome.stopReason.summary)\n"
        out += "  ran \(milliseconds(outcome.elapsed))"
        if let activation = outcome.activation { out += " (loaded in \(milliseconds(activation)))" }
        out += ", peak memory \(mebibytes(outcome.peakResidentBytes))\n"
        if let sandbox = outcome.sandbox { out += "  sandbox: \(sandbox.printable())\n" }
        if let sent = outcome.willTerminateSentAt {
            out += "  extensionWillTerminate sent at \(String(format: "%.3f", sent)) s\n"
        }
        if let killed = outcome.killSentAt { out += "  killed at \(String(format: "%.3f", killed)) s\n" }
        out += "  downloads (\(returned.count + scheduled.count)):\n"
        for (download, origin) in returned.map({ ($0, "returned") }) + scheduled.map({ ($0, "scheduled") }) {
            let essential = download.isEssential ? "essential" : "non-essential"
            let size = download.fileSize > 0 ? mebibytes(download.fileSize) : "size unknown"
            out += "    \(download.identifier)  \(download.url ?? "")  \(size)  \(essential)  "
            out += "priority \(download.priority)  \(origin)\n"
        }
        if !rejected.isEmpty {
            out += "  rejected (\(rejected.count)):\n"
            for r in rejected {
                let url = (r.download.url ?? "").printableURL(limit: 200)
                out += "    \(r.download.identifier.printable(limit: 200))  \(url)  \(r.error)\n"
            }
        }
        if !outcome.refusedCalls.isEmpty {
            out += "  refused calls (\(outcome.refusedCalls.count)):\n"
            for call in outcome.refusedCalls { out += "    \(call.function)(\(call.identifier ?? ""))  \(call.error)\n" }
        }
        print(out, terminator: "")
    }

    func printJSON() {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(JSONReport(self))) ?? Data("{}".utf8)
        print(String(decoding: data, as: UTF8.self))
    }

    private func milliseconds(_ d: Duration) -> String { String(format: "%.1f ms", d.inSeconds * 1000) }

    private func mebibytes(_ bytes: Int64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
}

/// The `--json` shape. Field names are the stable interface for scripts.
private struct JSONReport: Encodable {
    struct Stop: Encodable {
        var kind: String
        var summary: String
        var signal: Int32?
        var exitCode: Int32?
        var loadFailure: String?
        var willTerminateReturned: Bool?
    }

    struct DownloadLine: Encodable {
        var identifier: String
        var uniqueIdentifier: String?
        var url: String?
        var fileSize: Int64
        var essential: Bool
        var priority: Int64
        var sha256: String?
        var origin: String
    }

    struct Rejected: Encodable {
        var identifier: String
        var url: String?
        var error: HostError
    }

    var plugin: String
    var event: String
    var extensionIdentifier: String?
    var abiVersion: String?
    var sandbox: String?
    var stopReason: Stop
    var elapsedSeconds: Double
    var activationSeconds: Double?
    var willTerminateSentAtSeconds: Double?
    var killSentAtSeconds: Double?
    var peakResidentBytes: Int64
    var completedEntryPoints: Int
    var downloads: [DownloadLine]
    var rejected: [Rejected]
    var refusedCalls: [RefusedCall]
    var log: [WindowLogLine]
    var exitCode: Int32

    init(_ report: Report) {
        let o = report.outcome
        var stop = Stop(kind: o.stopReason.kind, summary: o.stopReason.summary)
        switch o.stopReason {
        case .crashed(let signal): stop.signal = signal
        case .exited(let code): stop.exitCode = code
        case .refusedToLoad(let failure, _): stop.loadFailure = failure.rawValue
        case .budgetExceeded(let returned): stop.willTerminateReturned = returned
        default: break
        }
        func download(_ d: Download, _ origin: String) -> DownloadLine {
            DownloadLine(
                identifier: d.identifier, uniqueIdentifier: d.uniqueIdentifier, url: d.url, fileSize: d.fileSize,
                essential: d.isEssential, priority: d.priority, sha256: d.sha256, origin: origin)
        }
        plugin = report.plugin
        event = report.request.name
        extensionIdentifier = o.extensionIdentifier
        abiVersion = o.abiVersion
        sandbox = o.sandbox
        stopReason = stop
        elapsedSeconds = o.elapsed.inSeconds
        activationSeconds = o.activation?.inSeconds
        willTerminateSentAtSeconds = o.willTerminateSentAt
        killSentAtSeconds = o.killSentAt
        peakResidentBytes = o.peakResidentBytes
        completedEntryPoints = o.completedEvents
        downloads = report.returned.map { download($0, "returned") } + report.scheduled.map { download($0, "scheduled") }
        rejected = report.rejected.map {
            Rejected(identifier: $0.download.identifier, url: $0.download.url?.withoutUserInfo, error: $0.error)
        }
        refusedCalls = o.refusedCalls
        log = o.log
        exitCode = report.exitCode
    }
}
