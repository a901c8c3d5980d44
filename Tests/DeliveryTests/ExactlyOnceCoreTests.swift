@testable import Delivery
@testable import ExtensionRuntime
import Foundation
import HostVocabulary
@_spi(Testing) import Queue
import Testing
import Vocabulary

/// The exactly-once core on its own, against a real queue and real files: the claim and its text, the settling of
/// claims a receiver left, a batch claimed for a window and settled after it, and the offers to a delegate. A
/// completion is delivered exactly when its ticket is gone; these check each way that can come about.
@Suite struct ExactlyOnceCoreTests {
    let folder = URL(fileURLWithPath: NSTemporaryDirectory())
        .appendingPathComponent("bahost-exactly-once-\(UUID().uuidString)")
    var deliveries: URL { folder.appendingPathComponent("deliveries") }

    /// A queue with one app and `finished` finished downloads (their files in `deliveries`) and `failed` failed ones,
    /// oldest first.
    func queue(finished: [String], failed: [String] = []) throws -> QueueStore {
        try FileManager.default.createDirectory(at: deliveries, withIntermediateDirectories: true)
        let store = try QueueStore(path: folder.appendingPathComponent("queue.sqlite").path)
        try store.install(AppRecord(
            appIdentifier: "app", appGroupIdentifier: "group.com.example.levels", pluginPath: "/nonexistent.so",
            manifestURL: "https://example.com/manifest", domainAllowList: [], downloadAllowance: 1 << 40,
            essentialDownloadAllowance: 1 << 40, allowInsecureLoopback: false))
        let all = finished + failed
        let rows = try store.enqueue(all.map {
            Download(
                identifier: $0, url: "https://example.com/\($0)",
                applicationGroupIdentifier: "group.com.example.levels", fileSize: 3)
        }, for: "app") { _, _ in nil }.map { try $0.result.get() }
        for var row in rows {
            if finished.contains(row.identifier) {
                let path = deliveries.appendingPathComponent(row.identifier).path
                #expect(FileManager.default.createFile(atPath: path, contents: Data("abc".utf8)))
                row.state = .finished
                row.filePath = path
            } else {
                row.state = .failed
                row.error = HostError(code: -1004, domain: "NSURLErrorDomain", message: "cannot connect")
            }
            try store.save(row)
        }
        return store
    }

    func pending(_ store: QueueStore, claimed: Bool? = nil) throws -> [String] {
        try store.pendingCompletions(for: "app", claimed: claimed).map(\.identifier)
    }

    /// A process that has ended: its PID with a start time it never had.
    var gone: ProcessStamp { ProcessStamp(pid: getpid(), startTime: 1) }

    /// How a claim is stored, and what it says of its holder: a window's never outlives the service that made it; an
    /// app process's holds while that process lives. Anything else read back is no claim.
    @Test func aClaimSaysWhoMayStillBeInTheCallback() throws {
        let me = try #require(ProcessStamp(pid: getpid()))
        for claim in [DeliveryClaim.window, .app(me), .app(gone)] {
            #expect(DeliveryClaim(claim.text) == claim)
        }
        #expect(DeliveryClaim.app(me).mayBeRunning && !DeliveryClaim.app(gone).mayBeRunning)
        #expect(!DeliveryClaim.window.mayBeRunning)
        for garbage in [nil, "", "app", "app 1", "app x 2", "window 1", "app 1 2 3"] {
            #expect(DeliveryClaim(garbage) == nil)
        }
    }

    /// At a delivery's start, each claim is settled: a ticket gone is delivered to the claim's holder; a holder gone
    /// with its ticket still there never returned from its callback, so the completion is released; a living holder
    /// keeps it; an unclaimed completion is left for the delivery.
    @Test func claimsLeftBehindAreSettledByTheirTickets() throws {
        let store = try queue(finished: ["took", "died", "busy", "free"])
        let me = try #require(ProcessStamp(pid: getpid()))
        var rows = try store.pendingCompletions(for: "app")
        rows[0].claim = DeliveryClaim.window.text
        rows[1].claim = DeliveryClaim.app(gone).text
        rows[2].claim = DeliveryClaim.app(me).text
        try store.saveDelivery(Array(rows[0...2]))
        unlink(rows[0].filePath!)

        let settlement = try ClaimSettlement.settle(store, appIdentifier: "app", deliveries: deliveries)
        #expect(settlement.delivered.map(\.0.identifier) == ["took"] && settlement.delivered.map(\.1) == [.window])
        #expect(settlement.inFlight == 1)
        #expect(try pending(store) == ["died", "busy", "free"])
        #expect(try pending(store, claimed: false) == ["died", "free"], "released, and never claimed")
        #expect(try pending(store, claimed: true) == ["busy"])
        #expect(FileManager.default.fileExists(atPath: rows[1].filePath!), "a released file stays for its redelivery")
    }

    /// A batch is claimed for a window before it opens (the failed one given its ticket, each attempt counted); what
    /// the window completed, or whose ticket it removed before it crashed, is delivered; the rest is released, and
    /// given up after the last attempt, its ticket removed.
    @Test func aWindowsBatchIsClaimedThenSettled() throws {
        let store = try queue(finished: ["first", "taken", "late"], failed: ["broken"])
        var delivery = ExtensionDelivery(store: store, deliveries: deliveries, batchSize: 4, maximumAttempts: 2)
        let batch = try #require(try delivery.claimBatch(for: "app"))
        #expect(batch.events.count == 4)
        #expect(try pending(store, claimed: true) == ["first", "taken", "late", "broken"])
        #expect(try delivery.claimBatch(for: "app") == nil, "nobody else gets a claimed completion")
        let broken = try store.pendingCompletions(for: "app", claimed: true)[3]
        let brokenTicket = deliveries.appendingPathComponent(DataRoot.fileName(broken.uniqueIdentifier) + ".failed").path
        #expect(CompletionTicket.exists(brokenTicket))

        // The window crashed after its first entry point returned, and after the second took its file.
        unlink(deliveries.appendingPathComponent("taken").path)
        let crashed = WindowOutcome(
            stopReason: .crashed(signal: SIGSEGV), elapsed: .milliseconds(5), activation: nil,
            extensionIdentifier: nil, abiVersion: nil, sandbox: nil, returnedDownloads: [], completedEvents: 1,
            willTerminateSentAt: nil, killSentAt: nil, refusedCalls: [], log: [], peakResidentBytes: 0)
        let report = try delivery.settle(batch, outcome: crashed)
        #expect(report.delivered.map(\.identifier) == ["first", "taken"] && report.abandoned.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: deliveries.appendingPathComponent("first").path))
        #expect(try pending(store, claimed: false) == ["late", "broken"])

        // Again, and the window crashes at once: the second attempt was the last.
        delivery.batchSize = 1
        let second = try #require(try delivery.claimBatch(for: "app"))
        #expect(second.events.count == 1)
        var none = crashed
        none.completedEvents = 0
        #expect(try delivery.settle(second, outcome: none).abandoned.map(\.identifier) == ["late"])
        #expect(!FileManager.default.fileExists(atPath: deliveries.appendingPathComponent("late").path))
        #expect(try pending(store) == ["broken"])
    }

    /// The delegate gets each completion claimed for its process first: what it handled is delivered (a file it
    /// left deleted, as Apple does), what it declines goes back for the extension, and one it is late with stays
    /// with it while its process lives.
    @Test func aDelegateGetsEachCompletionOnceClaimedForItsProcess() async throws {
        let store = try queue(finished: ["handled", "declined", "late", "after"])
        let me = try #require(ProcessStamp(pid: getpid()))
        let delivery = DelegateDelivery(store: store, deliveries: deliveries)
        var offered: [String] = []
        var delivered: [String] = []
        let outcome = try await delivery.offer("app", to: me, send: { completion in
            offered.append(completion.download.identifier)
            // The SDK claims before the call: the row says so while the delegate runs.
            let claimed = try? store.pendingCompletions(for: "app", claimed: true).map(\.identifier)
            #expect(claimed == [completion.download.identifier])
            switch completion.download.identifier {
            case "handled": return .handled
            case "declined": return .declined
            default: return .noAnswer
            }
        }, delivered: { delivered.append($0.identifier) })
        #expect(outcome == .waiting && offered == ["handled", "declined", "late"] && delivered == ["handled"])
        #expect(!FileManager.default.fileExists(atPath: deliveries.appendingPathComponent("handled").path))
        #expect(try pending(store, claimed: false) == ["declined", "after"])
        #expect(try pending(store, claimed: true) == ["late"], "held by a living process")

        // The same process dies with it: settled, it is released.
        var late = try store.pendingCompletions(for: "app", claimed: true)[0]
        late.claim = DeliveryClaim.app(gone).text
        try store.saveDelivery([late])
        _ = try ClaimSettlement.settle(store, appIdentifier: "app", deliveries: deliveries)
        #expect(try pending(store, claimed: false) == ["declined", "late", "after"])

        // A delegate that declines all of them leaves every one for the extension.
        let declinedAll = try await delivery.offer("app", to: me, send: { _ in .declined }, delivered: { _ in })
        #expect(declinedAll == .declinedSome)
        #expect(try pending(store, claimed: false) == ["declined", "late", "after"])
    }
}
