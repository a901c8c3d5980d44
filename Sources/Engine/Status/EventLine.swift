import ExtensionRuntime
import Foundation
import Vocabulary

/// A life-cycle event as the command line shows it: a JSON object for scripts (`--json`, one per line) and a line
/// of text for people (nil for events that only move a progress bar). `bahost run` prints them; the service sends
/// them to the `bahost install` or `launch` that waits on the app.
///
/// Each side is made when it is asked for, and each time: a reader shows one of them (`bahost run` prints either
/// JSON or text), and a small file's several events were made both ways for nothing.
public struct EventLine: @unchecked Sendable {  // safe: made once and only read; its makers hold copies of values
    private let makeJSON: () -> [String: Any]
    private let makeText: () -> String?

    public init(json: @autoclosure @escaping () -> [String: Any], text: @autoclosure @escaping () -> String?) {
        makeJSON = json
        makeText = text
    }

    public var json: [String: Any] { makeJSON() }
    /// Nil for events that only move a progress bar.
    public var text: String? { makeText() }

    /// The JSON object as one line of text.
    public var jsonText: String { EventJSON.line(json) }
}

extension LifecycleEvent {
    public var line: EventLine {
        switch self {
        case .manifestFetched(let bytes):
            return EventLine(json: ["event": "manifest", "bytes": bytes], text: "manifest fetched (\(bytes) bytes)")
        case .manifestWaiting(let error, let delay):
            return EventLine(
                json: ["event": "manifestWaiting", "error": Self.json(error), "retryInSeconds": delay.inSeconds],
                text: String(format: "manifest: trying again in %.1f s after: %@", delay.inSeconds, error.description))
        case .manifestFailed(let error):
            return EventLine(json: ["event": "manifestFailed", "error": Self.json(error)], text: "manifest failed: \(error)")
        case .window(let purpose, let outcome, let app):
            let name = purpose.name
            var object = Self.windowJSON(outcome)
            object["event"] = "window"
            object["purpose"] = name
            object["app"] = app
            let ms = String(format: "%.1f ms", outcome.elapsed.inSeconds * 1000)
            var text = "extension window (\(name)): \(outcome.stopReason.summary) [\(ms)]"
            for line in outcome.log { text += "\n    [\(line.source.rawValue)] \(line.message.printable())" }
            return EventLine(json: object, text: text)
        case .packInstalled(let app, let id, let version):
            return EventLine(
                json: ["event": "packInstalled", "app": app, "assetPackID": id, "version": version],
                text: "asset pack \(id) version \(version) installed")
        case .peers(let download, let figures, let fellBack):
            var object = Self.downloadJSON("peers", download, [
                "fromPeers": figures.fromPeers, "fromWebSeed": figures.fromWebSeed, "peers": figures.peers,
                "banned": figures.banned, "failedPieces": figures.failedPieces,
            ])
            if let fellBack { object["fellBack"] = fellBack }
            func amount(_ bytes: Int64) -> String { bytes == 0 ? "nothing" : Self.size(bytes) }
            var text = "\(download.identifier.printable()): \(amount(figures.fromPeers)) from peers, "
                + "\(amount(figures.fromWebSeed)) from the CDN (\(figures.peers) peers"
                + (figures.banned > 0 ? ", \(figures.banned) banned for bad pieces)" : ")")
            if let fellBack { text += "; fetching over HTTP: \(fellBack)" }
            return EventLine(json: object, text: text)
        case .packVetoed(let app, let id):
            return EventLine(
                json: ["event": "packVetoed", "app": app, "assetPackID": id],
                text: "asset pack \(id): the extension's shouldDownload returned false")
        case .packFailed(let app, let id, let error):
            return EventLine(
                json: ["event": "packFailed", "app": app, "assetPackID": id, "error": Self.json(error)],
                text: "asset pack \(id) failed: \(error)")
        case .rejected(let download, let error):
            return EventLine(
                json: [
                    "event": "rejected", "identifier": download.identifier,
                    "url": (download.url ?? "").withoutUserInfo, "error": Self.json(error),
                ],
                text: "rejected \(download.identifier.printable(limit: 200)): \(error)")
        case .queued(let queued):
            let essential = queued.isEssential ? ", essential" : ""
            return EventLine(
                json: Self.downloadJSON("queued", queued),
                text: "queued \(queued.identifier) (\(Self.size(queued.download.fileSize))\(essential), priority \(queued.priority))")
        case .queuedMany(let app, let count, let bytes, let essential):
            return EventLine(
                json: ["event": "queuedMany", "app": app, "count": count, "bytes": bytes, "essential": essential],
                text: "queued \(count) downloads (\(Self.size(bytes)) in all, \(essential) essential)")
        case .promoted(let queued):
            return EventLine(json: Self.downloadJSON("promoted", queued), text: "\(queued.identifier) moved to the foreground")
        case .began(let queued, let offset):
            return EventLine(
                json: Self.downloadJSON("began", queued, ["resumingAt": offset]),
                text: offset > 0 ? "resumed \(queued.identifier) at \(Self.size(offset))" : "began \(queued.identifier)")
        case .progress(let queued, let received, let expected):
            return EventLine(
                json: Self.downloadJSON("progress", queued, ["received": received, "expected": expected]), text: nil)
        case .paused(let queued, let network, let until, let error):
            var object = Self.downloadJSON("paused", queued)
            object["reason"] = network ? "waitingForNetwork" : "waitingToRetry"
            object["retryInSeconds"] = max(0, until.timeIntervalSinceNow)
            object["error"] = Self.json(error)
            let wait = String(format: "%.1f s", max(0, until.timeIntervalSinceNow))
            return EventLine(
                json: object,
                text: "paused \(queued.identifier), \(network ? "waiting for the network" : "waiting to retry") (\(wait)): \(error)")
        case .finished(let queued):
            return EventLine(
                json: Self.downloadJSON("finished", queued, ["bytes": queued.bytesReceived, "path": queued.filePath ?? ""]),
                text: "finished \(queued.identifier) (\(Self.size(queued.bytesReceived)))")
        case .failed(let queued, let error):
            return EventLine(
                json: Self.downloadJSON("failed", queued, ["error": Self.json(error)]),
                text: "failed \(queued.identifier): \(error)")
        case .delivered(let queued):
            return EventLine(json: Self.downloadJSON("delivered", queued), text: "delivered \(queued.identifier) to the extension")
        case .deliveredToApp(let queued):
            return EventLine(
                json: Self.downloadJSON("deliveredToApp", queued), text: "delivered \(queued.identifier) to the app's delegate")
        case .abandoned(let queued):
            return EventLine(
                json: Self.downloadJSON("abandoned", queued),
                text: "gave up delivering \(queued.identifier): its callback never returned")
        case .appMayLaunch(let app):
            return EventLine(json: ["event": "appMayLaunch", "app": app], text: "the app may launch now")
        case .queueFailed(let message):
            return EventLine(json: ["event": "queueFailed", "message": message], text: "the queue failed: \(message)")
        case .deliveryFailed(let app, let message, let delay):
            var object: [String: Any] = ["event": "deliveryFailed", "app": app, "message": message]
            object["retryInSeconds"] = delay?.inSeconds
            return EventLine(
                json: object,
                text: "delivery failed: \(message)" + (delay.map { "; trying again in \(Int($0.inSeconds)) s" } ?? ""))
        case .deliveriesLeftPending(let app, let count, let message):
            let completions = "\(count) completion\(count == 1 ? "" : "s")"
            return EventLine(
                json: ["event": "deliveriesLeftPending", "app": app, "count": count, "message": message],
                text: "\(completions) not delivered (\(message)): left pending for `bahost resume` or the service")
        }
    }

    /// The app the event is about, where it names one.
    public var appIdentifier: String? {
        switch self {
        case .window(_, _, let app), .appMayLaunch(let app), .packInstalled(let app, _, _), .packFailed(let app, _, _),
            .packVetoed(let app, _), .queuedMany(let app, _, _, _), .deliveryFailed(let app, _, _),
            .deliveriesLeftPending(let app, _, _):
            app
        case .queued(let d), .promoted(let d), .began(let d, _), .peers(let d, _, _), .progress(let d, _, _),
            .paused(let d, _, _, _),
            .finished(let d), .failed(let d, _), .delivered(let d), .deliveredToApp(let d), .abandoned(let d):
            d.appIdentifier
        case .manifestFetched, .manifestWaiting, .manifestFailed, .rejected, .queueFailed: nil
        }
    }

    /// `%.1f MiB` (rounded half to even, as `printf` rounds the exact quotient), without `String(format:)`, which
    /// cost a line per finished file several microseconds.
    public static func size(_ bytes: Int64) -> String {
        guard bytes != 0 else { return "size unknown" }
        let mebibyte: UInt64 = 1 << 20
        let (whole, part) = bytes.magnitude.quotientAndRemainder(dividingBy: mebibyte)
        let (tenth, rest) = (part * 10).quotientAndRemainder(dividingBy: mebibyte)
        var tenths = whole * 10 + tenth
        if rest * 2 > mebibyte || rest * 2 == mebibyte && tenths % 2 == 1 { tenths += 1 }
        return "\(bytes < 0 ? "-" : "")\(tenths / 10).\(tenths % 10) MiB"
    }

    public static func json(_ error: HostError) -> [String: Any] {
        ["code": error.code, "domain": error.domain, "message": error.message]
    }

    /// A download's event: what identifies the download, and what `adding` says of this event.
    public static func downloadJSON(
        _ event: String, _ queued: DownloadStatus, _ adding: [String: Any] = [:]
    ) -> [String: Any] {
        var object: [String: Any] = [
            "event": event, "identifier": queued.identifier, "uniqueIdentifier": queued.uniqueIdentifier,
            "url": queued.download.url ?? "", "essential": queued.isEssential, "fileSize": queued.download.fileSize,
        ]
        object.merge(adding) { _, added in added }
        return object
    }

    public static func windowJSON(_ outcome: WindowOutcome) -> [String: Any] {
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
