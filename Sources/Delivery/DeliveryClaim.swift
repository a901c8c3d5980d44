import Foundation
import HostVocabulary
import Queue
import Vocabulary

// Exactly once (docs/DOWNLOADS.md, "Exactly once"). Every pending completion has a *ticket*: a file whose presence says that no
// callback for it has returned. A finished download's ticket is its file; a failed one's is an empty file beside
// where its file would be. Before a callback is made, the service records durably who may make it (the claim);
// the receiver (the app's SDK, or the extension's runner) removes the ticket after the callback returned, and
// before it says so. A completion is delivered exactly when its ticket is gone: whoever dies at whatever step, the
// ticket and the claim together say what happened, and the claim keeps any other receiver from it meanwhile.

/// Who holds a completion while its callback may be running.
public enum DeliveryClaim: Sendable, Hashable {
    /// Offered to the delegate of this app process: it holds the completion for as long as it lives.
    case app(ProcessStamp)
    /// Handed to an extension window. A window never outlives the service that opened it (its runner dies with
    /// the service), and the service settles its windows' claims as each ends: a window claim found at the start of
    /// a delivery is the trace of a service that was killed.
    case window

    public init?(_ text: String?) {
        guard let text else { return nil }
        if text == "window" {
            self = .window
            return
        }
        let parts = text.split(separator: " ")
        guard parts.count == 3, parts[0] == "app", let pid = Int32(parts[1]), let start = UInt64(parts[2]) else {
            return nil
        }
        self = .app(ProcessStamp(pid: pid, startTime: start))
    }

    /// How the queue stores it.
    public var text: String {
        switch self {
        case .app(let stamp): "app \(stamp.pid) \(stamp.startTime)"
        case .window: "window"
        }
    }

    /// Whether the receiver may still be in its callback.
    var mayBeRunning: Bool {
        if case .app(let stamp) = self { return stamp.isAlive }
        return false
    }
}

/// A completion's ticket.
public enum CompletionTicket {
    /// Where the ticket of `completion` lies: its file when it finished, else `NAME.failed` in `deliveries`.
    public static func path(of completion: QueuedDownload, deliveries: URL) -> String {
        if completion.state == .finished, let path = completion.filePath { return path }
        return deliveries.appendingPathComponent("\(DataRoot.fileName(completion.uniqueIdentifier)).failed").path
    }

    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Gives the failed completions among `completions` their tickets, durably, before they are claimed. A
    /// completion nobody has claimed was never offered, so a missing ticket (the queue came from an older bahost,
    /// or a power cut undid its creation) is simply made again.
    public static func issue(_ completions: [QueuedDownload], deliveries: URL) throws {
        var created = false
        for completion in completions where completion.state != .finished || completion.filePath == nil {
            let path = path(of: completion, deliveries: deliveries)
            guard !exists(path) else { continue }
            if !created { try FileManager.default.createDirectory(at: deliveries, withIntermediateDirectories: true) }
            let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw TicketError(path: path, errno: errno) }
            close(fd)
            created = true
        }
        // One sync of the folder for the batch: the tickets are durable before the claims that rely on them are.
        if created {
            let folder = open(deliveries.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if folder >= 0 {
                fsync(folder)
                close(folder)
            }
        }
    }
}

/// A failed completion's ticket could not be made (the disk, or the container's folder).
public struct TicketError: Error, CustomStringConvertible {
    public var path: String
    public var errno: Int32

    public var description: String {
        "cannot make the ticket of a failed download at \(path): \(String(cString: strerror(errno)))"
    }
}

/// What the claims of an app's completions come to, at the start of a delivery.
public struct ClaimSettlement: Sendable {
    /// Completions whose receiver removed the ticket: delivered to it, now recorded so.
    public var delivered: [(QueuedDownload, DeliveryClaim)] = []
    /// Completions held by an app process still running its callback: nobody else gets them.
    public var inFlight = 0

    /// Settles the claims of `appIdentifier`'s completions: a ticket gone means delivered to the claim's holder; a
    /// holder gone with the ticket still there means its callback never returned, so the completion is released
    /// to be delivered again (to whichever receiver there is then); a living holder keeps it.
    public static func settle(_ store: QueueStore, appIdentifier: String, deliveries: URL) throws -> ClaimSettlement {
        var settlement = ClaimSettlement()
        var changed: [QueuedDownload] = []
        for var completion in try store.pendingCompletions(for: appIdentifier, claimed: true) {
            let claim = DeliveryClaim(completion.claim)
            let ticket = CompletionTicket.path(of: completion, deliveries: deliveries)
            if let claim, !CompletionTicket.exists(ticket) {
                completion.markDelivered()
                settlement.delivered.append((completion, claim))
            } else if claim?.mayBeRunning == true {
                settlement.inFlight += 1
                continue
            } else {
                completion.claim = nil
            }
            changed.append(completion)
        }
        try store.saveDelivery(changed)
        return settlement
    }
}

extension QueuedDownload {
    /// Records the completion delivered: its callback returned, or its receiver took the file.
    public mutating func markDelivered() {
        filePath = nil
        delivered = true
        claim = nil
    }
}

extension QueuedDownload {
    /// The completion as either receiver gets it, the delegate or the extension: its file, or its error (a failure
    /// the queue recorded without one reads "the download failed") with its ticket.
    public func completion(deliveries: URL) -> Completion {
        if state == .finished, let filePath { return Completion(download: described, result: .finished(filePath: filePath)) }
        let error = error ?? HostError.bahost("the download failed")
        return Completion(
            download: described, result: .failed(error, ticket: CompletionTicket.path(of: self, deliveries: deliveries)))
    }
}
