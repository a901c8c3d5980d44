import Delivery
@testable import Engine
import ExtensionRuntime
import Foundation
@_spi(Testing) @testable import Queue
import HostVocabulary
import Synchronization
import Testing
import TestSupport
import Transfer
import Vocabulary

/// The engine's parts on their own, against a real queue, real transfers to a local server and real extension
/// processes. Only the app side is a stand-in: the delegates an app process would answer through the service.
@Suite(.ownThreads, .serialized) struct EnginePartsTests {
    /// A data root, a queue with one app whose extension is `plugin`, and the engine's parts made over them as the
    /// engine makes them; its loop never runs: each test drives the parts it tests.
    func engine(
        plugin: String = "/nonexistent.so", settings: HostEngine.Settings = HostEngine.Settings(),
        delegates: AppDelegateRouter? = nil, events: Events = Events()
    ) throws -> HostEngine {
        let root = DataRoot(TestPlugins.scratch.appendingPathComponent("engine-\(UUID().uuidString)").path)
        let engine = try HostEngine(dataRoot: root, settings: settings, router: delegates) { events.append($0) }
        try engine.store.install(AppRecord(
            appIdentifier: "app", appGroupIdentifier: "group.com.example.levels", pluginPath: plugin,
            manifestURL: "http://127.0.0.1/manifest", domainAllowList: [], downloadAllowance: 1 << 40,
            essentialDownloadAllowance: 1 << 40, allowInsecureLoopback: true))
        _ = try engine.store.updateApp("app") { $0.launched = true }
        return engine
    }

    func download(_ identifier: String, _ url: String) -> Download {
        Download(identifier: identifier, url: url, applicationGroupIdentifier: "group.com.example.levels", fileSize: 0)
    }

    // MARK: The driver

    /// No more transfers than the global limit, no more to one host than its limit, and a turn with no free slot
    /// starts nothing.
    @Test func aTurnKeepsToTheGlobalAndPerHostLimits() async throws {
        let server = try FaultServer()
        server.serve(Data(count: 4096), at: "slow", faults: Array(repeating: .trickle(chunk: 1, every: .milliseconds(200)), count: 10))
        let settings = HostEngine.Settings(maximumConcurrentTransfers: 3, maximumTransfersPerHost: 2)
        let engine = try engine(settings: settings)
        let urls = (0..<5).map { "http://127.0.0.1:\(server.port)/slow?\($0)" }
            + (0..<3).map { "http://localhost:\(server.port)/slow?\($0)" }
        _ = try engine.store.enqueue(urls.enumerated().map { download("d\($0.offset)", $0.element) }, for: "app") { _, _ in nil }
        let driver = engine.driver

        _ = try driver.turn(["app"])
        let (running, perHost, perApp) = driver.current()
        #expect(running.count == 3)
        #expect(perHost == ["127.0.0.1": 2, "localhost": 1] && perApp == ["app": 3])
        #expect(try engine.store.activeDownloads(for: "app").filter { $0.state == .downloading }.count == 3)
        // Best first: the two oldest to the first host, and the oldest to the second.
        let moving = try engine.store.activeDownloads(for: "app").filter { running.contains($0.uniqueIdentifier) }
        #expect(Set(moving.map(\.identifier)) == ["d0", "d1", "d5"])

        _ = try driver.turn(["app"])
        #expect(driver.current().0 == running)

        await driver.shutdown()
        try await engine.client.shutdown()
        // Stopped, not lost: what was moving is recorded as waiting again, its partial file kept to resume.
        #expect(try engine.store.activeDownloads(for: "app").count == 8, "\((try? engine.store.downloads(for: "app"))?.map { ($0.identifier, $0.state, $0.error?.description ?? "") } ?? [])")
        #expect(try engine.store.activeDownloads(for: "app").allSatisfy { $0.state != .downloading })
    }

    /// A turn shares the slots between apps by what each has running: an app that queued many first does
    /// not take them all from one that queued after it.
    @Test func aTurnSharesTheSlotsBetweenApps() async throws {
        let server = try FaultServer()
        server.serve(Data(count: 4096), at: "slow", faults: Array(repeating: .trickle(chunk: 1, every: .milliseconds(200)), count: 10))
        let engine = try engine(settings: HostEngine.Settings(maximumConcurrentTransfers: 3, maximumTransfersPerHost: 8))
        var other = try #require(try engine.store.app("app"))
        other.appIdentifier = "other"
        try engine.store.install(other)
        let url = { (query: String) in "http://127.0.0.1:\(server.port)/slow?\(query)" }
        _ = try engine.store.enqueue((0..<6).map { download("a\($0)", url("a\($0)")) }, for: "app") { _, _ in nil }
        _ = try engine.store.enqueue((0..<2).map { download("b\($0)", url("b\($0)")) }, for: "other") { _, _ in nil }
        let driver = engine.driver

        _ = try driver.turn(["app", "other"])
        #expect(driver.current().perApp == ["app": 2, "other": 1])
        let moving = try (engine.store.activeDownloads(for: "app") + engine.store.activeDownloads(for: "other"))
            .filter { driver.current().0.contains($0.uniqueIdentifier) }
        #expect(Set(moving.map(\.identifier)) == ["a0", "a1", "b0"])

        await driver.shutdown()
        try await engine.client.shutdown()
    }

    /// What a turn chooses beyond the free slots is reserved: the moment a transfer's body ends, the next reserved
    /// download starts, before any other turn; the next turn then marks its row moving, with the first one's outcome.
    @Test func aFreedSlotGoesToTheReservedDownloadBeforeTheNextTurn() async throws {
        let server = try FaultServer()
        server.serve(Data(count: 4096), at: "fast")
        server.serve(Data(count: 4096), at: "slow", faults: [.trickle(chunk: 1, every: .milliseconds(200))])
        let engine = try engine(
            settings: HostEngine.Settings(maximumConcurrentTransfers: 1, maximumTransfersPerHost: 1))
        _ = try engine.store.enqueue(
            [download("first", "http://127.0.0.1:\(server.port)/fast"),
             download("second", "http://127.0.0.1:\(server.port)/slow")], for: "app") { _, _ in nil }
        let rows = try engine.store.activeDownloads(for: "app")
        let (first, second) = (rows[0].uniqueIdentifier, rows[1].uniqueIdentifier)
        let driver = engine.driver

        func state(_ identifier: String) throws -> TransferState? {
            try engine.store.downloads(for: "app").first { $0.identifier == identifier }?.state
        }
        _ = try driver.turn(["app"])
        #expect(try state("first") == .downloading && state("second") == .queued)
        // No turn between: only the reserve can start the second, once the first's body has ended.
        #expect(try await eventually { driver.current().0 == [second] })
        #expect(try state("second") == .queued)

        _ = try driver.turn(["app"])
        #expect(driver.current().0 == [second] && !driver.current().0.contains(first))
        let after = try engine.store.downloads(for: "app")
        #expect(after.first { $0.identifier == "first" }?.state == .finished)
        #expect(after.first { $0.identifier == "second" }?.state == .downloading)
        #expect(after.first { $0.identifier == "second" }?.attempts == 1)

        await driver.shutdown()
        try await engine.client.shutdown()
        // Stopped, not lost, as a download a turn started.
        let stopped = try engine.store.activeDownloads(for: "app")
        #expect(stopped.map(\.identifier) == ["second"] && stopped.allSatisfy { $0.state != .downloading })
    }

    /// While the reserve lasts, the engine's next turn waits for its pace, so that what ends meanwhile is recorded
    /// by one turn; the reserve running low, or a wake that must not wait (a foreground download, a delegate), ends
    /// the wait; with nothing reserved the turn is due at once.
    @Test func theNextTurnWaitsForItsPaceOnlyWhileTheReserveLasts() async throws {
        let server = try FaultServer()
        // Each path answers its requests so (a fault a request): the driver's below make ten in all.
        let ends = FaultServer.Fault.trickle(chunk: 1024, every: .milliseconds(100))
        let slow = FaultServer.Fault.trickle(chunk: 1, every: .milliseconds(200))
        server.serve(Data(count: 4096), at: "ends", faults: Array(repeating: ends, count: 10))
        server.serve(Data(count: 4096), at: "slow", faults: Array(repeating: slow, count: 10))
        /// A driver whose first turn started the first two of `paths` and reserved the others.
        func turned(pace: Duration, _ paths: [String]) throws -> (HostEngine, EngineDriver, ContinuousClock.Instant) {
            let engine = try engine(settings: HostEngine.Settings(
                maximumConcurrentTransfers: 2, maximumTransfersPerHost: 2, turnPace: pace))
            _ = try engine.store.enqueue(
                paths.enumerated().map { download("d\($0)", "http://127.0.0.1:\(server.port)/\($1)") }, for: "app"
            ) { _, _ in nil }
            let driver = engine.driver
            let start = ContinuousClock.now
            _ = try driver.turn(["app"])
            return (engine, driver, start)
        }
        /// Whether the wait for the next turn ends (within `eventually`'s ten seconds) once `meanwhile` has run.
        func paceEnds(
            _ driver: EngineDriver, since start: ContinuousClock.Instant, meanwhile: () async throws -> Void = {}
        ) async throws -> Bool {
            let ended = Atomic(false)
            let waiting = Task {
                await driver.paceNextTurn(since: start)
                ended.store(true, ordering: .relaxed)
            }
            defer { waiting.cancel() }
            try await meanwhile()
            return try await eventually { ended.load(ordering: .relaxed) }
        }
        func stop(_ engine: HostEngine, _ driver: EngineDriver) async throws {
            await driver.shutdown()
            try await engine.client.shutdown()
        }

        // Two running, two reserved: the wait lasts the pace.
        let pace = Duration.milliseconds(300)
        let (lasting, paced, start) = try turned(pace: pace, ["slow", "slow", "slow", "slow"])
        await paced.paceNextTurn(since: start)
        #expect(ContinuousClock.now - start >= pace)
        try await stop(lasting, paced)

        // With an hour's pace: a wake that must not wait ends it, whether it comes during the wait or before it.
        let (woken, wokenDriver, wokenStart) = try turned(pace: .seconds(3600), ["slow", "slow", "slow", "slow"])
        #expect(try await paceEnds(wokenDriver, since: wokenStart) {
            try await Task.sleep(for: .milliseconds(200))
            woken.wake()
        })
        woken.wake()
        #expect(try await paceEnds(wokenDriver, since: wokenStart))
        try await stop(woken, wokenDriver)

        // The two running end (in about 400 ms), the reserve starts the other two and runs out: the turn is due.
        let (drained, drainedDriver, drainedStart) = try turned(
            pace: .seconds(3600), ["ends", "ends", "slow", "slow"])
        #expect(try await paceEnds(drainedDriver, since: drainedStart))
        #expect(try await eventually {
            drainedDriver.current().0.count == 2 && !drainedDriver.slots.startedEarly.isEmpty
        })
        try await stop(drained, drainedDriver)

        // Nothing reserved: due at once.
        let (unreserved, unreservedDriver, unreservedStart) = try turned(pace: .seconds(3600), ["slow"])
        #expect(try await paceEnds(unreservedDriver, since: unreservedStart))
        try await stop(unreserved, unreservedDriver)
    }

    // MARK: One transfer

    /// A non-essential download's fileSize is an estimate (Apple narrowed the size promise to essential downloads):
    /// a file larger than it still finishes, and the allowance counts the bytes received; one that passes what the
    /// allowance leaves stops with Apple's 204.
    @Test func aNonEssentialSizeIsAnEstimateAndTheAllowanceCountsWhatArrived() async throws {
        let server = try FaultServer()
        server.serve(Data(count: 3000), at: "larger")
        server.serve(Data(count: 9000), at: "much-larger")
        let engine = try engine()
        _ = try engine.store.updateApp("app") { app in
            app.launched = false
            app.domainAllowList = ["127.0.0.1"]
            app.downloadAllowance = 10_000
        }
        func run(_ identifier: String, hint: Int64) async throws -> QueuedDownload {
            var estimate = download(identifier, "http://127.0.0.1:\(server.port)/\(identifier)")
            estimate.fileSize = hint
            let queued = try engine.store.enqueue([estimate], for: "app") { app, download in
                var policy = app.policy
                let error = policy.admit(download, for: nil)
                app.take(policy)
                return error
            }
            let row = try queued[0].result.get()
            let app = try #require(try engine.store.app("app"))
            let job = engine.jobs.job(
                row, app: app, policy: app.policy, blocking: nil, bodyEnded: {},
                progressed: { try? engine.store.save($0) })
            let outcome = try #require(await job.run { $0?.outcome })
            // As the driver does: the allowance charged what arrived beyond the estimate, then the turn records it.
            if let charge = outcome.charge { try engine.store.charge("app", bytes: charge, essential: row.isEssential) }
            _ = try engine.store.record([outcome.row], start: [])
            return try #require(try engine.store.downloads(for: "app").first { $0.identifier == identifier })
        }
        let larger = try await run("larger", hint: 2000)
        #expect(larger.state == .finished && larger.bytesReceived == 3000)
        #expect(try engine.store.app("app")?.usedBytes == 3000)
        // 1,000 reserved at admission and 6,000 unreserved: 7,000 at most, and the file is 9,000.
        let tooLarge = try await run("much-larger", hint: 1000)
        #expect(tooLarge.state == .failed)
        #expect(tooLarge.error?.code == 204 && tooLarge.error?.domain == "BAErrorDomain")
        try await engine.client.shutdown()
    }

    // MARK: The content-request runner

    /// What a content request returns is staged as it arrives and queued once the request returned: shape and
    /// duplicates refused each with its error, the rest queued in the order returned.
    @Test func aContentRequestIsQueuedWhenItReturnsEachRefusalWithItsError() async throws {
        let events = Events()
        let engine = try engine(plugin: try TestPlugins.c("example_extension"), events: events)
        let manifest = try TestPlugins.file([
            "first 10 optional http://127.0.0.1/first", "plain 10 optional http://example.com/plain",
            "first 10 optional http://127.0.0.1/again", "second 10 optional http://127.0.0.1/second",
        ].joined(separator: "\n"))
        let outcome = try await engine.contentRequests.run(
            .periodic, appIdentifier: "app", localManifest: manifest)
        #expect(outcome?.stopReason == .returned)
        #expect(events.names == ["queued:first", "queued:second", "rejected:plain:0", "rejected:first:100"])
        let rows = try engine.store.downloads(for: "app").sorted { $0.sequence < $1.sequence }
        #expect(rows.map(\.identifier) == ["first", "plain", "first", "second"])
        #expect(rows.map(\.state) == [.queued, .failed, .failed, .queued])
        // Nothing is left staged: the last stage to end drops the staging table, else its own rows.
        let staged = try await engine.store.database.write { db in
            try db.tableExists("staged_download", in: "temp")
                ? try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM temp.staged_download") ?? -1 : 0
        }
        #expect(staged == 0)
        try await engine.client.shutdown()
    }

    /// Downloads a content request added before it crashed are never queued: its stage is dropped.
    @Test func whatARequestThatNeverReturnedAddedIsNotQueued() async throws {
        let engine = try engine(plugin: try TestPlugins.c("misbehaving/segfault"))
        let outcome = try await engine.contentRequests.run(
            .periodic, appIdentifier: "app", localManifest: try TestPlugins.file("# nothing"))
        #expect(outcome?.stopReason == .crashed(signal: SIGSEGV))
        #expect(try engine.store.downloads(for: "app").isEmpty)
        try await engine.client.shutdown()
    }

    /// A request that queues more than a line each would serve has one event for them all; each row is queued, and
    /// a refusal still has its own event.
    @Test func aLargeContentRequestHasOneEventForWhatItQueued() async throws {
        let events = Events()
        let engine = try engine(plugin: try TestPlugins.c("example_extension"), events: events)
        let count = ContentRequestRunner.eventPerDownloadLimit + 500
        let lines = (0..<count).map { "d\($0) 100 optional http://127.0.0.1/d\($0)" }
            + ["d7 100 optional http://127.0.0.1/again"]
        let outcome = try await engine.contentRequests.run(
            .periodic, appIdentifier: "app", localManifest: try TestPlugins.file(lines.joined(separator: "\n")))
        #expect(outcome?.stopReason == .returned)
        #expect(events.names == ["queuedMany:\(count):\(count * 100):0", "rejected:d7:100"])
        #expect(try engine.store.activeDownloadCount(for: "app") == count)
        // Several packets, each checked while the one before was staged: the rows keep the order returned.
        let rows = try engine.store.downloads(for: "app").sorted { $0.sequence < $1.sequence }
        #expect(rows.map(\.identifier) == (0..<count).map { "d\($0)" } + ["d7"])
        #expect(rows.last?.state == .failed)
        try await engine.client.shutdown()
    }

    // MARK: Deliveries

    /// A running app's delegate gets each completion once, at once; one it declines (its delegate lacks the method)
    /// wakes the extension, which gets it in a window.
    @Test func theDelegateGetsACompletionOnceAndWhatItDeclinesGoesToTheExtension() async throws {
        let delegates = Delegates(accepting: ["taken"])
        let events = Events()
        let engine = try engine(plugin: try TestPlugins.c("example_extension"), delegates: delegates, events: events)
        let taken = try finished("taken", in: engine)
        let declined = try finished("declined", in: engine)
        let router = engine.driver

        router.completionRecorded("app")
        #expect(try await eventually { try router.isIdle && engine.store.pendingCompletionCount(for: "app") == 0 })
        #expect(delegates.offered == ["taken", "declined"])
        #expect(try engine.store.download(taken.uniqueIdentifier)?.delivered == true)
        #expect(!FileManager.default.fileExists(atPath: taken.filePath!))
        #expect(events.names.contains("deliveredToApp:taken"))
        #expect(events.names.contains("delivered:declined"))
        #expect(!events.names.contains("delivered:taken"))
        _ = declined

        // Nothing is pending: a second look offers nothing again.
        router.completionRecorded("app")
        #expect(try await eventually { router.isIdle })
        #expect(delegates.offered == ["taken", "declined"])
        try await engine.client.shutdown()
    }

    /// A completion whose callback never returns (the extension crashes in it) is tried `maximumAttempts` times in
    /// all, then given up: marked delivered, its file deleted, and reported as abandoned.
    @Test func aCompletionIsGivenUpAfterTheMaximumAttempts() async throws {
        let events = Events()
        let engine = try engine(plugin: try TestPlugins.c("misbehaving/crash_on_every_finish"), events: events)
        let completion = try finished("doomed", in: engine)
        let router = engine.driver

        for attempt in 1...3 {
            let readSince = ContinuousClock.now
            let snapshot = try engine.store.snapshot(now: Date(), apps: ["app"])
            #expect(snapshot.pendingCompletions["app"] == 1, "attempt \(attempt)")
            router.deliverDue(["app"], snapshot, readSince: readSince)
            #expect(try await eventually(30) { router.isIdle })
            #expect(try engine.store.download(completion.uniqueIdentifier)?.deliveryAttempts == attempt)
        }
        let given = try #require(try engine.store.download(completion.uniqueIdentifier))
        #expect(given.delivered)
        #expect(!FileManager.default.fileExists(atPath: completion.filePath!))
        #expect(events.names.filter { $0 == "abandoned:doomed" }.count == 1)
        #expect(!events.names.contains("delivered:doomed"))
        #expect(try engine.store.snapshot(now: Date(), apps: ["app"]).pendingCompletions["app"] == 0)
        try await engine.client.shutdown()
    }

    /// Claims in a queue read before the app's last delivery ended start no delivery (they may be that window's own,
    /// settled since); in a queue read after it, a claim a killed service left is settled and delivered.
    @Test func claimsReadBeforeTheLastDeliveryEndedStartNoDelivery() async throws {
        let events = Events()
        let engine = try engine(plugin: try TestPlugins.c("example_extension"), events: events)
        let router = engine.driver
        func claimed(_ identifier: String) throws {
            var completion = try finished(identifier, in: engine)
            completion.claim = DeliveryClaim.window.text
            try engine.store.save(completion)
        }
        try claimed("first")
        let readBefore = ContinuousClock.now
        let before = try engine.store.snapshot(now: Date(), apps: ["app"])
        router.deliverDue(["app"], before, readSince: readBefore)
        #expect(try await eventually(30) { router.isIdle && events.names.contains("delivered:first") })

        try claimed("second")
        router.deliverDue(["app"], before, readSince: readBefore)
        #expect(router.isIdle)
        #expect(try engine.store.download(uniqueIdentifier(of: "second", in: engine))?.claim != nil)

        let readAfter = ContinuousClock.now
        router.deliverDue(["app"], try engine.store.snapshot(now: Date(), apps: ["app"]), readSince: readAfter)
        #expect(try await eventually(30) { router.isIdle && events.names.contains("delivered:second") })
        try await engine.client.shutdown()
    }

    func uniqueIdentifier(of identifier: String, in engine: HostEngine) throws -> String {
        try #require(try engine.store.downloads(for: "app").first { $0.identifier == identifier }).uniqueIdentifier
    }

    /// A fast extension gets 32 completions in its first window and, once that window showed its pace, the largest
    /// batch in the next: 288 completions take two windows, not nine.
    @Test func anExtensionsBatchesGrowWithItsPace() async throws {
        let events = Events()
        let engine = try engine(plugin: try TestPlugins.c("example_extension"), events: events)
        for index in 0..<288 { _ = try finished("f\(index)", in: engine) }
        let router = engine.driver
        for (window, deliveredAfter) in [(1, 32), (2, 288)] {
            let readSince = ContinuousClock.now
            router.deliverDue(["app"], try engine.store.snapshot(now: Date(), apps: ["app"]), readSince: readSince)
            #expect(try await eventually(30) { router.isIdle })
            #expect(events.names.filter { $0.hasPrefix("delivered:") }.count == deliveredAfter, "window \(window)")
        }
        #expect(try engine.store.snapshot(now: Date(), apps: ["app"]).pendingCompletions["app"] == 0)
        try await engine.client.shutdown()
    }

    /// A queued download recorded as finished, with its file in the app group's container.
    func finished(_ identifier: String, in engine: HostEngine) throws -> QueuedDownload {
        var queued = try engine.store.enqueue([download(identifier, "http://127.0.0.1/\(identifier)")], for: "app") { _, _ in nil }[0]
            .result.get()
        let folder = engine.dataRoot.deliveries(for: "group.com.example.levels")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent(DataRoot.fileName(queued.uniqueIdentifier)).path
        try Data("contents of \(identifier)".utf8).write(to: URL(fileURLWithPath: path))
        queued.state = .finished
        queued.filePath = path
        queued.bytesReceived = 12
        try engine.store.save(queued)
        return queued
    }
}

/// The events the engine reported, as `kind:identifier`.
final class Events: Sendable {
    private let seen = Mutex<[String]>([])

    var names: [String] { seen.withLock { $0 } }

    func append(_ event: LifecycleEvent) {
        let name: String
        switch event {
        case .delivered(let d): name = "delivered:\(d.identifier)"
        case .deliveredToApp(let d): name = "deliveredToApp:\(d.identifier)"
        case .abandoned(let d): name = "abandoned:\(d.identifier)"
        case .finished(let d): name = "finished:\(d.identifier)"
        case .queued(let d): name = "queued:\(d.identifier)"
        case .queuedMany(_, let count, let bytes, let essential): name = "queuedMany:\(count):\(bytes):\(essential)"
        case .rejected(let d, let error): name = "rejected:\(d.identifier):\(error.code)"
        default: return
        }
        seen.withLock { $0.append(name) }
    }
}

/// An app running with a delegate (in this process) that handles the completions of `accepting` and lacks the
/// method for the rest; like the SDK, it removes the ticket of what it handled before it answers.
final class Delegates: AppDelegateRouter {
    private let accepting: Set<String>
    private let offers = Mutex<[String]>([])

    init(accepting: Set<String>) { self.accepting = accepting }

    var offered: [String] { offers.withLock { $0 } }

    func delegateProcess(_ appIdentifier: String) -> Int32? { appIdentifier == "app" ? getpid() : nil }

    func offer(_ completion: Completion, of appIdentifier: String, to pid: Int32) async -> OfferResult {
        offers.withLock { $0.append(completion.download.identifier) }
        guard accepting.contains(completion.download.identifier) else { return .declined }
        unlink(completion.ticket)
        return .handled
    }

    func challenge(_ download: Download, of appIdentifier: String, _ challenge: AuthenticationChallenge) async
        -> ChallengeAnswer?
    { nil }
}

