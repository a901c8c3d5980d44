import ArgumentParser
import BackgroundAssets
import Synchronization

/// The app side of the example: code as an app on Apple's platforms would write it against `BADownloadManager`.
/// It sets a delegate, schedules, promotes and cancels downloads, and prints every callback it receives (one JSON
/// object per line with `--json`). Run it through `bahost launch com.example.levels -- levels-app …`, which waits
/// for the essential downloads and tells the SDK which app this is.
@main
struct LevelsApp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "levels-app",
        abstract: "The example app: sets a BADownloadManager delegate, schedules and promotes downloads, prints callbacks.")

    @Option(help: "Schedule a download in the background: ID=URL@SIZE.") var schedule: [DownloadSpec] = []
    @Option(help: "Start a download in the foreground now: ID=URL@SIZE.") var foreground: [DownloadSpec] = []
    @Option(help: "Promote a scheduled download (by identifier) to the foreground.") var promote: [String] = []
    @Option(help: "Cancel a scheduled download (by identifier).") var cancel: [String] = []
    @Flag(help: "Cancel each download scheduled here, with the object it was scheduled with.") var thenCancel = false
    @Flag(help: "Promote each download scheduled here, with the object it was scheduled with.") var thenPromote = false
    @Option(help: "Which delegate to set: full, progress-only (no completion methods), main-actor (a @MainActor class), or none.")
    var delegate: DelegateKind = .full
    @Option(help: "Exit after this many completions (finished or failed) reached the delegate.") var waitFor = 0
    @Option(help: "Seconds to wait for them.") var timeout: Double = 60
    @Option(help: "Seconds to keep running after acting, with the delegate set.") var stay: Double = 0
    @Option(help: "USER:PASSWORD to answer a server's authentication challenge with.") var credential: String?
    @Option(help: ArgumentHelp(
        "How the full delegate's finished method misbehaves, for the tests: sleep=SECONDS (before moving the file), exit (ends the process before touching it), or kill=PID (moves it, then sends PID SIGKILL).",
        valueName: "misbehaviour"))
    var inFinished: FinishedMisbehaviour?
    @Option(help: "Take exclusive control (waiting up to this many ms; --exclusive-control=-1 waits as long as needed) before acting.")
    var exclusiveControl: Int?
    @Option(help: "Seconds to hold exclusive control.") var hold: Double = 0
    @Flag(help: "Print the current downloads after acting.") var list = false
    @Flag(help: "Say a game of the app is being played (bahost's setPlaying) before acting.") var playing = false
    @Flag(help: "Print one JSON object per line.") var json = false

    func run() async throws {
        let printer = Printer(json: json)
        let manager = BADownloadManager.shared
        let received = Received()
        let delegateObject: (any BADownloadManagerDelegate)? = switch delegate {
        case .full: FullDelegate(printer: printer, received: received, credential: credential, misbehaviour: inFinished)
        case .progressOnly: ProgressOnlyDelegate(printer: printer)
        case .mainActor: await MainActorDelegate(printer: printer, received: received)
        case .none: nil
        }
        manager.delegate = delegateObject

        if let wait = exclusiveControl {
            do {
                let hold = self.hold
                if wait < 0 {
                    try await manager.withExclusiveControl {
                        printer.event("exclusiveControl", ["acquired": true])
                        Thread.sleep(forTimeInterval: hold)
                    }
                } else {
                    try await manager.withExclusiveControl(before: Date(timeIntervalSinceNow: Double(wait) / 1000)) {
                        printer.event("exclusiveControl", ["acquired": true])
                        Thread.sleep(forTimeInterval: hold)
                    }
                }
            } catch {
                printer.event("exclusiveControl", ["acquired": false, "error": Printer.describe(error)])
            }
        }

        func attempt(_ action: String, _ identifier: String, _ body: () throws -> Void) {
            do {
                try body()
                printer.event(action, ["identifier": identifier, "ok": true])
            } catch {
                printer.event(action, ["identifier": identifier, "ok": false, "error": Printer.describe(error)])
            }
        }
        if playing {
            do {
                try manager.setPlaying(true)
                printer.event("playing", ["ok": true])
            } catch {
                printer.event("playing", ["ok": false, "error": Printer.describe(error)])
            }
        }
        let scheduled = schedule.map(\.download)
        for download in scheduled { attempt("schedule", download.identifier) { try manager.scheduleDownload(download) } }
        // What an app does: the object it scheduled names the download it scheduled.
        for download in scheduled {
            if thenPromote { attempt("promote", download.identifier) { try manager.startForegroundDownload(download) } }
            if thenCancel { attempt("cancel", download.identifier) { try manager.cancel(download) } }
        }
        for spec in foreground { attempt("startForeground", spec.identifier) { try manager.startForegroundDownload(spec.download) } }
        for identifier in promote {
            attempt("promote", identifier) {
                guard let download = try manager.fetchCurrentDownloads().first(where: { $0.identifier == identifier }) else {
                    throw NSError(domain: BAErrorDomain, code: BAErrorCode.downloadNotScheduled.rawValue)
                }
                try manager.startForegroundDownload(download)
            }
        }
        for identifier in cancel {
            attempt("cancel", identifier) {
                let current = try manager.fetchCurrentDownloads().first { $0.identifier == identifier }
                // A download that is not scheduled any more is cancelled by a fresh object: the service says 101.
                try manager.cancel(current ?? DownloadSpec(identifier: identifier, url: URL(string: "https://localhost/")!, size: 1).download)
            }
        }
        if list {
            do {
                let downloads = try await manager.currentDownloads
                printer.event("currentDownloads", ["identifiers": downloads.map(\.identifier).sorted()])
            } catch {
                printer.event("currentDownloads", ["error": Printer.describe(error)])
            }
        }

        if stay > 0 { try await Task.sleep(for: .milliseconds(Int64(stay * 1000))) }
        guard waitFor > 0 else { return }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while received.count < waitFor {
            guard Date() < deadline else {
                printer.event("timeout", ["received": received.count])
                throw ExitCode(1)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        withExtendedLifetime(delegateObject) {}
    }
}

enum DelegateKind: String, ExpressibleByArgument {
    case full, progressOnly = "progress-only", mainActor = "main-actor", none
}

/// What `--in-finished` asks the finished method to do wrong.
enum FinishedMisbehaviour: ExpressibleByArgument {
    case sleep(Double)
    case exit
    case kill(pid_t)

    init?(argument: String) {
        if argument == "exit" {
            self = .exit
        } else if argument.hasPrefix("sleep="), let seconds = Double(argument.dropFirst(6)) {
            self = .sleep(seconds)
        } else if argument.hasPrefix("kill="), let pid = pid_t(argument.dropFirst(5)) {
            self = .kill(pid)
        } else {
            return nil
        }
    }
}

/// `ID=URL@SIZE`.
struct DownloadSpec: ExpressibleByArgument {
    var identifier: String
    var url: URL
    var size: Int

    init(identifier: String, url: URL, size: Int) {
        self.identifier = identifier
        self.url = url
        self.size = size
    }

    init?(argument: String) {
        guard let equals = argument.firstIndex(of: "="), let at = argument.lastIndex(of: "@"), equals < at,
            let url = URL(string: String(argument[argument.index(after: equals)..<at])),
            let size = Int(argument[argument.index(after: at)...])
        else { return nil }
        self.init(identifier: String(argument[..<equals]), url: url, size: size)
    }

    var download: BAURLDownload {
        BAURLDownload(
            identifier: identifier, request: URLRequest(url: url), fileSize: size,
            applicationGroupIdentifier: "group.com.example.levels")
    }
}

/// Completions that reached the delegate.
final class Received: Sendable {
    private let value = Mutex(0)
    var count: Int { value.withLock { $0 } }
    func add() { value.withLock { $0 += 1 } }
}

/// A delegate with every method: it keeps finished files in the app group's container.
final class FullDelegate: NSObject, BADownloadManagerDelegate, @unchecked Sendable {
    let printer: Printer
    let received: Received
    let credential: String?
    let misbehaviour: FinishedMisbehaviour?

    init(printer: Printer, received: Received, credential: String?, misbehaviour: FinishedMisbehaviour?) {
        self.printer = printer
        self.received = received
        self.credential = credential
        self.misbehaviour = misbehaviour
    }

    func download(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        printer.event(
            "challenge",
            ["identifier": download.identifier, "host": challenge.protectionSpace.host,
             "realm": challenge.protectionSpace.realm ?? "", "previousFailureCount": challenge.previousFailureCount])
        guard let credential, let colon = credential.firstIndex(of: ":"), challenge.previousFailureCount == 0 else {
            return (.cancelAuthenticationChallenge, nil)
        }
        let user = String(credential[..<colon])
        let password = String(credential[credential.index(after: colon)...])
        return (.useCredential, URLCredential(user: user, password: password, persistence: .forSession))
    }

    func downloadDidBegin(_ download: BADownload) { printer.event("began", ["identifier": download.identifier]) }

    func downloadDidPause(_ download: BADownload) { printer.event("paused", ["identifier": download.identifier]) }

    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        printer.event(
            "progress", ["identifier": download.identifier, "written": totalBytesWritten, "expected": totalBytesExpectedToWrite],
            text: false)
    }

    func download(_ download: BADownload, failedWithError error: any Error) {
        printer.event("failed", ["identifier": download.identifier, "error": Printer.describe(error)])
        received.add()
    }

    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        // Move the file before returning, or the system deletes it.
        var fields: [String: Any] = ["identifier": download.identifier]
        printer.event("finishing", fields, text: false)
        switch misbehaviour {
        case .sleep(let seconds): Thread.sleep(forTimeInterval: seconds)
        case .exit: Foundation.exit(3)
        default: break
        }
        keep(download, at: fileURL, describedIn: &fields)
        if case .kill(let pid) = misbehaviour { kill(pid, SIGKILL) }
        printer.event("finished", fields)
        received.add()
    }
}

/// Moves a finished file into the app group's container (as an app must before its method returns), saying where in
/// `fields`.
func keep(_ download: BADownload, at fileURL: URL, describedIn fields: inout [String: Any]) {
    guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.levels")
    else { return }
    let assets = container.appendingPathComponent("Assets")
    let destination = assets.appendingPathComponent(download.identifier)
    do {
        try FileManager.default.createDirectory(at: assets, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(at: destination)
        try FileManager.default.moveItem(at: fileURL, to: destination)
        fields["path"] = destination.path
    } catch {
        fields["error"] = "\(error)"
    }
}

/// A delegate as SwiftUI apps write one: a controller isolated to the main actor, with state of its own, whose
/// methods Swift 6 runs there. Each event says whether it ran on the main queue.
@MainActor final class MainActorDelegate: NSObject, BADownloadManagerDelegate {
    let printer: Printer
    let received: Received
    private var began: Set<String> = []
    private static let mainQueue = DispatchSpecificKey<Bool>()

    init(printer: Printer, received: Received) {
        self.printer = printer
        self.received = received
        DispatchQueue.main.setSpecific(key: Self.mainQueue, value: true)
    }

    private var onMainQueue: Bool { DispatchQueue.getSpecific(key: Self.mainQueue) == true }

    func downloadDidBegin(_ download: BADownload) {
        began.insert(download.identifier)
        printer.event("began", ["identifier": download.identifier, "mainQueue": onMainQueue])
    }

    func download(_ download: BADownload, failedWithError error: any Error) {
        printer.event("failed", ["identifier": download.identifier, "error": Printer.describe(error), "mainQueue": onMainQueue])
        received.add()
    }

    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        var fields: [String: Any] = [
            "identifier": download.identifier, "mainQueue": onMainQueue, "sawBegin": began.contains(download.identifier),
        ]
        keep(download, at: fileURL, describedIn: &fields)
        printer.event("finished", fields)
        received.add()
    }
}

/// A delegate without the completion methods: completions then wake the extension, as on Apple's platforms.
final class ProgressOnlyDelegate: NSObject, BADownloadManagerDelegate, @unchecked Sendable {
    let printer: Printer

    init(printer: Printer) { self.printer = printer }

    func downloadDidBegin(_ download: BADownload) { printer.event("began", ["identifier": download.identifier]) }
}

/// Prints events as text or JSON lines, unbuffered.
struct Printer: Sendable {
    let json: Bool

    func event(_ name: String, _ fields: [String: Any], text: Bool = true) {
        if json {
            var object = fields
            object["event"] = name
            guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
            FileHandle.standardOutput.write(data + Data("\n".utf8))
        } else if text {
            let details = fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            FileHandle.standardOutput.write(Data("\(name) \(details)\n".utf8))
        }
    }

    static func describe(_ error: any Error) -> String {
        let error = error as NSError
        return "\(error.domain) \(error.code): \(error.localizedDescription)"
    }
}
