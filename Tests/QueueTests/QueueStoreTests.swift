import Foundation
@_spi(Testing) @testable import Queue
import HostVocabulary
import Testing
import TestSupport
import Vocabulary

@Suite(.ownThreads) struct QueueStoreTests {
    /// A queue with `apps` installed, each with the same settings.
    func store(apps: [String] = ["app"]) throws -> (QueueStore, String) {
        let path = TestPlugins.scratch.appendingPathComponent("\(UUID().uuidString)/queue.sqlite").path
        let store = try QueueStore(path: path)
        for app in apps {
            try store.install(AppRecord(
                appIdentifier: app, appGroupIdentifier: "g", pluginPath: "/x.so", manifestURL: "https://a.example.com/m",
                domainAllowList: ["a.example.com"], downloadAllowance: 1000, essentialDownloadAllowance: 100,
                allowInsecureLoopback: false))
        }
        return (store, path)
    }

    func download(_ id: String, priority: Int64 = 50, essential: Bool = false) -> Download {
        Download(
            identifier: id, url: "https://a.example.com/\(id)", applicationGroupIdentifier: "g", fileSize: 10,
            priority: priority, isEssential: essential)
    }

    /// The engine asks only for what it can start: the free slots' worth, none to a host at its cap, none twice.
    @Test func runnableGivesOnlyWhatCanStart() throws {
        let (store, _) = try store()
        let elsewhere = Download(
            identifier: "elsewhere", url: "https://b.example.com/x", applicationGroupIdentifier: "g", fileSize: 10,
            priority: 50, isEssential: false)
        _ = try store.enqueue((1...10).map { download("d\($0)") } + [elsewhere], for: "app") { _, _ in nil }
        #expect(try store.runnable(now: Date(), backgroundLimit: 3).map(\.identifier) == ["d1", "d2", "d3"])
        #expect(try store.runnable(now: Date(), saturatedHosts: ["a.example.com"]).map(\.identifier) == ["elsewhere"])
        let started = try store.startTransfers(try store.runnable(now: Date(), backgroundLimit: 2))
        #expect(started.map(\.state) == [.downloading, .downloading])
        #expect(started.map(\.attempts) == [1, 1])
        #expect(try store.startTransfers(started).isEmpty)
        #expect(try store.runnable(now: Date(), backgroundLimit: 1).map(\.identifier) == ["d3"])
        let snapshot = try store.snapshot(now: Date(), apps: ["app"], backgroundLimit: 0)
        #expect(snapshot.runnable.isEmpty && snapshot.appsWithActiveDownloads == ["app"] && snapshot.hasWork("app"))
    }

    /// On a metered network the run order passes over background downloads and those whose request avoids expensive
    /// networks; the network's conditions survive in the row (its network access), and loopback hosts need none.
    @Test func runnablePassesOverWhatTheNetworksConditionsHold() throws {
        // Two apps: an app's background downloads wait for its essential ones anyway.
        let (store, _) = try store(apps: ["app", "other"])
        var avoids = download("avoids", essential: true)
        avoids.networkAccess = [.avoidsExpensive]
        let local = Download(
            identifier: "local", url: "https://127.0.0.1/x", applicationGroupIdentifier: "g", fileSize: 10)
        _ = try store.enqueue([download("essential", essential: true), avoids], for: "app") { _, _ in nil }
        _ = try store.enqueue([download("background"), local], for: "other") { _, _ in nil }
        #expect(try store.runnable(now: Date()).map(\.identifier) == ["essential", "avoids", "background", "local"])
        let metered = NetworkConditions(metered: .guessYes)
        #expect(try store.runnable(now: Date(), conditions: metered).map(\.identifier) == ["essential", "local"])
        let offline = NetworkConditions(connectivity: .none)
        #expect(try store.runnable(now: Date(), conditions: offline).map(\.identifier) == ["local"])
        let asleep = NetworkConditions(metered: .no, asleep: true)
        #expect(try store.runnable(now: Date(), conditions: asleep).isEmpty)
        let row = try #require(try store.runnable(now: Date()).first { $0.identifier == "avoids" })
        #expect(row.download.networkAccess == [.avoidsExpensive])
    }

    /// The engine's turn records the outcomes that came since the last one and starts the next transfers in one
    /// transaction: an outcome whose row was cancelled meanwhile is reported gone without failing the others, and an
    /// outcome is written before the starts, so a row queued again while its outcome waited (the engine recovers rows
    /// marked moving when nothing runs) is not started a second time.
    @Test func aTurnRecordsOutcomesBeforeItStartsAndReportsTheCancelledOnesGone() throws {
        let (store, _) = try store()
        _ = try store.enqueue((1...4).map { download("d\($0)") }, for: "app") { _, _ in nil }
        var moving = try store.startTransfers(try store.runnable(now: Date(), backgroundLimit: 3))
        #expect(moving.map(\.identifier) == ["d1", "d2", "d3"])
        _ = try store.cancel(appIdentifier: "app", uniqueIdentifier: moving[1].uniqueIdentifier, identifier: "d2")
        // d3's transfer ended but its outcome has not been recorded yet when the engine requeues moving rows.
        try store.recoverInterruptedTransfers()
        for index in moving.indices {
            moving[index].state = .finished
            moving[index].filePath = "/container/\(moving[index].identifier)"
        }
        let candidates = try store.runnable(now: Date(), backgroundLimit: 4)
        #expect(Set(candidates.map(\.identifier)) == ["d1", "d3", "d4"])
        let (started, gone) = try store.record(moving, start: candidates)
        #expect(started.map(\.identifier) == ["d4"])
        #expect(gone == [moving[1].uniqueIdentifier])
        let rows = Dictionary(uniqueKeysWithValues: try store.downloads(for: "app").map { ($0.identifier, $0) })
        #expect(rows["d1"]?.state == .finished && rows["d3"]?.state == .finished && rows["d4"]?.state == .downloading)
        #expect(rows["d3"]?.attempts == 1 && rows["d2"] == nil)
    }

    /// Downloads the engine started from its reserve are marked moving by the next turn, before its outcomes; one
    /// whose outcome that turn records too is written once, by the outcome (which carries the attempt its start
    /// counted), and ends as the outcome says.
    @Test func aDownloadStartedEarlyAndEndedByTheSameTurnIsWrittenOnce() throws {
        let (store, _) = try store()
        _ = try store.enqueue((1...3).map { download("d\($0)") }, for: "app") { _, _ in nil }
        // As `TransferSlots.takeReserved` starts them: moving, their attempt counted, the queue not told yet.
        let early = try store.runnable(now: Date(), backgroundLimit: 3).map { queued in
            var started = queued
            started.state = .downloading
            started.attempts += 1
            return started
        }
        var ended = early[0]
        ended.state = .finished
        ended.filePath = "/container/d1"
        let before = try store.write { $0.totalChangesCount }
        _ = try store.turn(
            recording: [ended], startedEarly: early, now: Date(), apps: ["app"],
            excluding: Set(early.map(\.uniqueIdentifier)), saturatedHosts: [], backgroundLimit: 0
        ) { _ in [] }
        #expect(try store.write { $0.totalChangesCount } - before == 3)
        let rows = Dictionary(uniqueKeysWithValues: try store.downloads(for: "app").map { ($0.identifier, $0) })
        #expect(rows["d1"]?.state == .finished && rows["d1"]?.attempts == 1 && rows["d1"]?.filePath == "/container/d1")
        #expect(rows["d2"]?.state == .downloading && rows["d2"]?.attempts == 1)
        #expect(rows["d3"]?.state == .downloading && rows["d3"]?.attempts == 1)
    }

    /// The engine hands its turn a `TurnChoice` as data: the store reads no more background downloads than the free
    /// slots and the reserve's room, starts (marks moving) what fits the limits, and leaves in the choice what it
    /// reserved; the rest stays queued.
    @Test func aTurnAppliesTheChoiceItIsGiven() throws {
        let (store, _) = try store()
        let hosts = ["d1": "a", "d2": "a", "d3": "b", "d4": "c"]
        _ = try store.enqueue(hosts.keys.sorted().map { id in
            Download(
                identifier: id, url: "https://\(hosts[id]!).example.com/\(id)", applicationGroupIdentifier: "g",
                fileSize: 10)
        }, for: "app") { _, _ in nil }
        var choice = TurnChoice(
            limits: SlotLimits(total: 2, perHost: 1), taken: 0, perHost: [:], reserve: [], reserveLimit: 1)
        #expect(choice.backgroundLimit == 3)
        let (_, started, gone) = try store.turn(
            recording: [], now: Date(), apps: ["app"], excluding: [], saturatedHosts: [], choice: &choice)
        #expect(started.map(\.identifier) == ["d1", "d3"] && started.allSatisfy { $0.state == .downloading })
        #expect(choice.reserve.map(\.identifier) == ["d2"] && !choice.turnedAway && choice.slotsFull, "d4 was not read")
        #expect(gone.isEmpty)
        let rows = Dictionary(uniqueKeysWithValues: try store.downloads(for: "app").map { ($0.identifier, $0.state) })
        #expect(rows == ["d1": .downloading, "d2": .queued, "d3": .downloading, "d4": .queued])
    }

    /// A turn with outcomes is one transaction: they are recorded first, the queue is then read as they left it (a
    /// finished row is a pending completion, no longer moving), and only what `choose` picks of the runnable is marked
    /// moving; an outcome whose row was cancelled is reported gone.
    @Test func aTurnReadsTheQueueAsItsOutcomesLeftIt() throws {
        let (store, _) = try store()
        _ = try store.enqueue((1...4).map { download("d\($0)") }, for: "app") { _, _ in nil }
        var moving = try store.startTransfers(try store.runnable(now: Date(), backgroundLimit: 2))
        _ = try store.cancel(appIdentifier: "app", uniqueIdentifier: moving[1].uniqueIdentifier, identifier: "d2")
        for index in moving.indices {
            moving[index].state = .finished
            moving[index].filePath = "/container/\(moving[index].identifier)"
        }
        var offered: [String] = []
        let (snapshot, started, gone) = try store.turn(
            recording: moving, now: Date(), apps: ["app"], excluding: [], saturatedHosts: [], backgroundLimit: 2
        ) { runnable in
            offered = runnable.map(\.identifier)
            return Array(runnable.prefix(1))
        }
        #expect(offered == ["d3", "d4"])
        #expect(started.map(\.identifier) == ["d3"] && started.map(\.state) == [.downloading])
        #expect(gone == [moving[1].uniqueIdentifier])
        #expect(snapshot.pendingCompletions["app"] == 1 && snapshot.appsWithActiveDownloads == ["app"])
        let rows = Dictionary(uniqueKeysWithValues: try store.downloads(for: "app").map { ($0.identifier, $0) })
        #expect(rows["d1"]?.state == .finished && rows["d3"]?.state == .downloading && rows["d4"]?.state == .queued)
        #expect(rows["d2"] == nil)
    }

    /// A packet's identifiers go to SQLite as a JSON array written by hand: one the queue has active is refused as
    /// it is staged (Apple's 100, before the app's policy counts it), whatever characters it holds.
    @Test func aStagedIdentifierTheQueueHasActiveIsRefusedWhateverItHolds() throws {
        let (store, _) = try store()
        let odd = ["q\"uote", "back\\slash", "tab\tnew\nline\u{1}", "é/ü", "plain"]
        _ = try store.enqueue(odd.map { download($0) }, for: "app") { _, _ in nil }
        let staging = try store.beginStaging(for: "app")
        var admitted: [String] = []
        let checked = (odd + ["fresh"]).map { (download: download($0), error: HostError?.none, host: String?.none) }
        try staging.stage(checked) { _, index in
            admitted.append(checked[index].download.identifier)
            return nil
        }
        try staging.commit()
        var queued: [String] = [], refused: [String: Int64] = [:]
        try staging.forEachCommitted(.queued) { queued.append($0.identifier) }
        try staging.forEachCommitted(.failed) { refused[$0.identifier] = $0.error?.code }
        #expect(admitted == ["fresh"] && queued == ["fresh"])
        #expect(refused == Dictionary(uniqueKeysWithValues: odd.map { ($0, Int64(100)) }))
    }

    /// A system-provided unique identifier is Apple's form, its UUID written as Foundation writes one (upper-case hex,
    /// 8-4-4-4-12), for every digit at every place; a staged download without one is given one in that form.
    @Test func aSystemProvidedIdentifierWritesItsUUIDAsFoundationDoes() throws {
        var uuids = [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))]
        uuids += (0..<16).map { digit in
            let b = UInt8(digit * 16 + (15 - digit))
            return UUID(uuid: (b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b))
        }
        uuids += (0..<500).map { _ in UUID() }
        for uuid in uuids {
            #expect(Download.uniqueIdentifier(group: "g", uuid: uuid) == "BAURLDownload.g.\(uuid.uuidString)")
        }
        let (store, _) = try store()
        let staging = try store.beginStaging(for: "app")
        try staging.stage([(download("fresh"), nil, nil)]) { _, _ in nil }
        try staging.commit()
        let given = try #require(try store.downloads(for: "app").first?.uniqueIdentifier)
        let uuid = try #require(UUID(uuidString: String(given.dropFirst("BAURLDownload.g.".count))))
        #expect(given == "BAURLDownload.g.\(uuid.uuidString)")
    }

    /// Requests staged at once share the staging table: the first to end takes only its own rows, the last drops
    /// the table, and the next request stages into a new one.
    @Test func stagesOpenAtOnceKeepTheirOwnRows() throws {
        let (store, _) = try store(apps: ["app", "other"])
        let first = try store.beginStaging(for: "app"), second = try store.beginStaging(for: "other")
        try first.stage([(download("a1"), nil, nil), (download("a2"), nil, nil)]) { _, _ in nil }
        try second.stage([(download("o1"), nil, nil)]) { _, _ in nil }
        try first.commit()
        try second.stage([(download("o2"), nil, nil)]) { _, _ in nil }
        try second.commit()
        let third = try store.beginStaging(for: "app")
        try third.stage([(download("a3"), nil, nil)]) { _, _ in nil }
        try third.discard()
        let fourth = try store.beginStaging(for: "app")
        try fourth.stage([(download("a4"), nil, nil)]) { _, _ in nil }
        try fourth.commit()
        #expect(first.queued.count == 2 && second.queued.count == 2 && fourth.queued.count == 1)
        #expect(try store.downloads(for: "app").map(\.identifier) == ["a1", "a2", "a4"])
        #expect(try store.downloads(for: "other").map(\.identifier) == ["o1", "o2"])
    }

    /// A turn with no outcomes to record reads the queue on a reader and takes the writer only for what it starts: it
    /// returns while another writer holds the queue (a content request's commit of 100,000 rows held the engine's
    /// turn 0.85 s), and what it picked is marked moving only if it still waits when the writer is its own.
    @Test func aTurnWithNothingToRecordDoesNotWaitForAnotherWriter() throws {
        let (store, _) = try store()
        _ = try store.enqueue((1...3).map { download("d\($0)") }, for: "app") { _, _ in nil }
        nonisolated(unsafe) let staging = try store.beginStaging(for: "app")
        let extra = download("staged")
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let staged = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            // The writer held from inside a transaction, as a long admission holds it.
            try? staging.stage([(extra, nil, nil)]) { _, _ in
                holding.signal()
                release.wait()
                return nil
            }
            staged.signal()
        }
        holding.wait()
        // The writer goes after 5 s at the latest, so that a turn that waits for it fails rather than hangs.
        DispatchQueue.global().asyncAfter(deadline: .now() + 5) { release.signal() }
        let start = ContinuousClock.now
        let held = try store.turn(
            recording: [], now: Date(), apps: ["app"], excluding: [], saturatedHosts: [], backgroundLimit: 2
        ) { _ in [] }
        let waited = ContinuousClock.now - start
        release.signal()
        staged.wait()
        #expect(waited < .seconds(2), "the turn waited \(waited) for another writer")
        #expect(held.snapshot.runnable.map(\.identifier) == ["d1", "d2"] && held.started.isEmpty)
        // d1 is cancelled after the turn read it and before it marks it moving: only d2 starts.
        let turn = try store.turn(
            recording: [], now: Date(), apps: ["app"], excluding: [], saturatedHosts: [], backgroundLimit: 2
        ) { runnable in
            let first = runnable[0]
            _ = try? store.cancel(appIdentifier: "app", uniqueIdentifier: first.uniqueIdentifier, identifier: "d1")
            return runnable
        }
        #expect(turn.started.map(\.identifier) == ["d2"] && turn.started.map(\.state) == [.downloading])
        let rows = Dictionary(uniqueKeysWithValues: try store.downloads(for: "app").map { ($0.identifier, $0) })
        #expect(rows["d1"] == nil && rows["d2"]?.state == .downloading && rows["d3"]?.state == .queued)
    }

    /// Delivery saves what it changes and nothing else: a copy of the row taken before its outcome was recorded
    /// does not undo the outcome, the delivered moment is the first one (what pruning counts from), and a row that is
    /// gone is named, the rows before it in the batch rolled back with it.
    @Test func deliverySavesOnlyItsOwnColumns() throws {
        let (store, _) = try store()
        _ = try store.enqueue([download("d1"), download("d2")], for: "app") { _, _ in nil }
        var done = try store.startTransfers(try store.runnable(now: Date(), backgroundLimit: 2))
        let stale = done
        for index in done.indices {
            done[index].state = .finished
            done[index].bytesReceived = 10
            done[index].filePath = "/container/\(done[index].identifier)"
        }
        _ = try store.record(done, start: [])
        var claimed = stale
        for index in claimed.indices {
            claimed[index].deliveryAttempts += 1
            claimed[index].claim = "window"
        }
        try store.saveDelivery(claimed)
        var rows = try store.downloads(for: "app")
        #expect(rows.map(\.state) == [.finished, .finished] && rows.map(\.bytesReceived) == [10, 10])
        #expect(rows.map(\.claim) == ["window", "window"] && rows.map(\.deliveryAttempts) == [1, 1])
        #expect(try store.pendingCompletions(for: "app").isEmpty)

        claimed[0].delivered = true
        claimed[0].claim = nil
        claimed[0].filePath = nil
        try store.saveDelivery([claimed[0]])
        #expect(try store.pruneDelivered(before: Date().addingTimeInterval(-60)) == 0)
        Thread.sleep(forTimeInterval: 0.05)
        let firstDelivered = Date()
        try store.saveDelivery([claimed[0]])  // saved delivered again: it still counts from the first time
        #expect(try store.pruneDelivered(before: firstDelivered) == 1)

        // d1's row is gone (pruned): the batch fails naming it, and d2's release before it is rolled back.
        claimed[1].claim = nil
        do {
            try store.saveDelivery([claimed[1], claimed[0]])
            Issue.record("a delivery saved for a row that is gone")
        } catch QueueError.unknownDownload(let uniqueIdentifier) {
            #expect(uniqueIdentifier == claimed[0].uniqueIdentifier)
        }
        rows = try store.downloads(for: "app")
        #expect(rows.map(\.identifier) == ["d2"] && rows.first?.claim == "window")
    }

    /// The turn's walk of the run order: downloads already starting and other apps' are passed over, and a front
    /// of `scanLimit` all for a host at its cap ends the walk rather than read the whole queue; within it, what is
    /// behind that host's downloads is found.
    @Test func runnablePassesOverWhatItMayNotStartWithinItsWalk() throws {
        let (store, _) = try store()
        _ = try store.enqueue((1...4).map { download("d\($0)") }, for: "app") { _, _ in nil }
        let starting = try store.runnable(now: Date(), backgroundLimit: 2).map(\.uniqueIdentifier)
        let next = try store.runnable(now: Date(), excluding: Set(starting), backgroundLimit: 2)
        #expect(next.map(\.identifier) == ["d3", "d4"])
        #expect(try store.runnable(now: Date(), apps: ["other"]).isEmpty)

        let (long, _) = try self.store()
        let far = Download(
            identifier: "far", url: "https://b.example.com/x", applicationGroupIdentifier: "g", fileSize: 0,
            priority: 0, isEssential: false)
        _ = try long.enqueue(
            (1...QueueStore.scanLimit).map { download("front\($0)", priority: 60) } + [far], for: "app") { _, _ in nil }
        #expect(try long.runnable(now: Date(), saturatedHosts: ["a.example.com"]).isEmpty)
        #expect(try long.runnable(now: Date(), backgroundLimit: 1).map(\.identifier) == ["front1"])

        let (near, _) = try self.store()
        _ = try near.enqueue(
            (1..<QueueStore.scanLimit).map { download("front\($0)", priority: 60) } + [far], for: "app") { _, _ in nil }
        #expect(try near.runnable(now: Date(), saturatedHosts: ["a.example.com"]).map(\.identifier) == ["far"])
    }

    /// What fetchCurrentDownloads returns, read straight from the columns: the same downloads, fields and public
    /// states as the queue's rows describe, in queue order, without asset packs or what has finished.
    @Test func currentDownloadsAreTheActiveRowsAsTheABIDescribesThem() throws {
        let (store, _) = try store()
        var described = download("headers", priority: 70, essential: true)
        described.sha256 = String(repeating: "a", count: 64)
        described.httpHeaders = ["Authorization: Bearer t", "X-Line: two\nlines"]
        var pack = download("pack")
        pack.kind = .assetPack
        let results = try store.enqueue([download("first"), described, pack, download("done")], for: "app") { _, _ in nil }
        #expect(try results[2].result.get().download.kind == .assetPack)
        var done = try results[3].result.get()
        done.state = .finished
        done.filePath = "/somewhere"
        try store.save(done)
        _ = try store.startTransfers([try results[0].result.get()])

        let current = try store.currentDownloads(for: "app")
        #expect(current.map(\.identifier) == ["first", "headers"])
        #expect(current.map(\.state) == [TransferState.downloading.publicState, TransferState.queued.publicState])
        let expected = try store.activeDownloads(for: "app").filter { $0.download.kind != .assetPack }.map(\.described)
        #expect(current == expected)
        #expect(current[1].httpHeaders == described.httpHeaders && current[1].sha256 == described.sha256)
        #expect(current[1].uniqueIdentifier != nil && current[1].isEssential && current[1].priority == 70)
        #expect(try store.currentDownloads(for: "other").isEmpty)
    }

    /// The rows are found by their state, which orders SQLite's index differently (downloading, queued, waiting to
    /// retry); what an app fetches is still in the order it scheduled them.
    @Test func currentDownloadsAreInQueueOrderWhateverTheirStates() throws {
        let (store, _) = try store()
        let results = try store.enqueue((1...6).map { download("d\($0)") }, for: "app") { _, _ in nil }
        var waiting = try results[1].result.get()
        waiting.state = .waitingToRetry
        waiting.retryAt = Date().addingTimeInterval(60)
        try store.save(waiting)
        _ = try store.startTransfers([try results[4].result.get(), try results[2].result.get()])

        let current = try store.currentDownloads(for: "app")
        #expect(current.map(\.identifier) == ["d1", "d2", "d3", "d4", "d5", "d6"])
        #expect(current[1].state == TransferState.waitingToRetry.publicState)
        #expect(current[2].state == TransferState.downloading.publicState)
    }

    @Test func everythingSurvivesReopening() throws {
        let (store, path) = try store()
        let results = try store.enqueue([download("a"), download("b")], for: "app") { app, d in
            app.usedBytes += d.fileSize
            return nil
        }
        var a = try results[0].result.get()
        a.state = .waitingToRetry
        a.bytesReceived = 5
        a.etag = "\"e\""
        try store.save(a)

        let reopened = try QueueStore(path: path)
        let again = try #require(try reopened.download(a.uniqueIdentifier))
        #expect(again.state == .waitingToRetry && again.bytesReceived == 5 && again.etag == "\"e\"")
        #expect(again.download.identifier == "a" && again.download.uniqueIdentifier == a.uniqueIdentifier)
        #expect(try reopened.app("app")?.usedBytes == 20)
        #expect(try reopened.activeDownloads(for: "app").map(\.identifier) == ["a", "b"])
    }

    @Test func anActiveIdentifierCannotBeQueuedTwice() throws {
        let (store, _) = try store()
        _ = try store.enqueue([download("a")], for: "app") { _, _ in nil }
        let second = try store.enqueue([download("a")], for: "app") { _, _ in nil }
        guard case .failure(let error) = second[0].result else { Issue.record("queued twice"); return }
        #expect(error.code == 100)
        // Once it has ended, the identifier may be queued again (a failed essential download, rescheduled).
        var first = try #require(try store.activeDownloads(for: "app").first)
        first.state = .failed
        try store.save(first)
        #expect(try store.enqueue([download("a")], for: "app") { _, _ in nil }[0].result.get().identifier == "a")
    }

    @Test func essentialFirstThenPriorityThenAge() throws {
        let (store, _) = try store()
        _ = try store.enqueue(
            [download("low", priority: 0), download("high", priority: 100), download("essential", priority: 0, essential: true),
             download("also-high", priority: 100)], for: "app") { _, _ in nil }
        // Non-essential downloads wait while an essential one is active.
        #expect(try store.runnable(now: Date()).map(\.identifier) == ["essential"])
        var essential = try #require(try store.activeDownloads(for: "app").first { $0.isEssential })
        essential.state = .finished
        try store.save(essential)
        #expect(try store.runnable(now: Date()).map(\.identifier) == ["high", "also-high", "low"])
    }

    /// The background slots are shared between apps: an app with many downloads queued first does not take every
    /// slot until they are done; the next slot goes to the app with the fewest running.
    @Test func theSlotsAreSharedBetweenAppsWithTheFewestRunningFirst() throws {
        let (store, _) = try store(apps: ["app", "other"])
        _ = try store.enqueue((0..<20).map { download("a\($0)") }, for: "app") { _, _ in nil }
        _ = try store.enqueue([download("b0"), download("b1")], for: "other") { _, _ in nil }
        #expect(try store.runnable(now: Date(), backgroundLimit: 4).map(\.identifier) == ["a0", "b0", "a1", "b1"])
        #expect(try store.runnable(now: Date(), backgroundLimit: 1, running: ["app": 3]).map(\.identifier) == ["b0"])
        #expect(
            try store.runnable(now: Date(), backgroundLimit: 4, running: ["other": 2]).map(\.identifier)
                == ["a0", "a1", "a2", "b0"])
        #expect(try store.runnable(now: Date(), apps: ["app"], backgroundLimit: 2).map(\.identifier) == ["a0", "a1"])
        let snapshot = try store.snapshot(now: Date(), apps: ["app", "other"], backgroundLimit: 2, running: ["app": 1])
        #expect(snapshot.runnable.map(\.identifier) == ["b0", "a0"])
    }

    /// Sharing keeps what matters more than fairness: an essential download (which holds its app's launch) goes
    /// before another app's non-essential one, and an app's priority orders only its own downloads.
    @Test func essentialDownloadsGoFirstAndPriorityStaysWithinAnApp() throws {
        let (store, _) = try store(apps: ["app", "other", "third"])
        _ = try store.enqueue([download("a-old"), download("a-newer")], for: "app") { _, _ in nil }
        _ = try store.enqueue(
            [download("b-low", priority: 0), download("b-high", priority: 100)], for: "other") { _, _ in nil }
        // Equal shares: the older download first, whatever the other app's priority; within an app, its priority.
        #expect(
            try store.runnable(now: Date(), backgroundLimit: 4).map(\.identifier) == ["a-old", "b-high", "a-newer", "b-low"])
        _ = try store.enqueue([download("c-essential", essential: true)], for: "third") { _, _ in nil }
        #expect(
            try store.runnable(now: Date(), backgroundLimit: 2, running: ["third": 3]).map(\.identifier)
                == ["c-essential", "a-old"])
    }

    @Test func waitingDownloadsRunWhenTheirTimeComes() throws {
        let (store, _) = try store()
        var a = try store.enqueue([download("a")], for: "app") { _, _ in nil }[0].result.get()
        a.state = .waitingForNetwork
        a.retryAt = Date(timeIntervalSinceNow: 60)
        try store.save(a)
        #expect(try store.runnable(now: Date()).isEmpty)
        #expect(try store.runnable(now: Date(timeIntervalSinceNow: 61)).map(\.identifier) == ["a"])
        #expect(try store.nextRetry().map { abs($0.timeIntervalSince(a.retryAt!)) < 0.01 } == true)
    }

    @Test func interruptedTransfersAreQueuedAgainAndCompletionsStayPending() throws {
        let (store, path) = try store()
        var results = try store.enqueue([download("moving"), download("done")], for: "app") { _, _ in nil }
        var moving = try results[0].result.get()
        moving.state = .downloading
        try store.save(moving)
        var done = try results[1].result.get()
        done.state = .finished
        done.filePath = "/somewhere"
        try store.save(done)
        results = []

        let restarted = try QueueStore(path: path)
        try restarted.recoverInterruptedTransfers()
        #expect(try restarted.download(moving.uniqueIdentifier)?.state == .queued)
        #expect(try restarted.pendingCompletions(for: "app").map(\.identifier) == ["done"])
        #expect(try restarted.hasWork(for: "app"))
    }

    @Test func cancelMatchesUniqueIdentifierOrIdentifier() throws {
        let (store, _) = try store()
        let a = try store.enqueue([download("a"), download("b")], for: "app") { _, _ in nil }[0].result.get()
        #expect(try store.cancel(appIdentifier: "app", uniqueIdentifier: a.uniqueIdentifier, identifier: "ignored") != nil)
        #expect(try store.cancel(appIdentifier: "app", uniqueIdentifier: nil, identifier: "b") != nil)
        #expect(try store.cancel(appIdentifier: "app", uniqueIdentifier: nil, identifier: "b") == nil)
        #expect(try store.activeDownloads(for: "app").isEmpty)
    }

    /// Delivered rows go after their retention; a queue that delivered 100,000 downloads, pruned along the way, is no
    /// larger than one that delivered half as many: SQLite reuses the pages the pruned rows freed.
    @Test func deliveredDownloadsArePrunedAndTheQueueStaysBounded() throws {
        let (queue, path) = try store()
        func bytesOnDisk() -> Int64 {
            [path, path + "-wal"].compactMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int64 }
                .reduce(0, +)
        }
        func deliverBatch(_ cycle: Int) throws {
            for batch in 0..<10 {
                let queued = try queue.enqueue(
                    (0..<5000).map { self.download("c\(cycle)-\(batch)-\($0)") }, for: "app") { _, _ in nil }
                try queue.save(try queued.map { result in
                    var row = try result.result.get()
                    row.state = .finished
                    row.delivered = true
                    return row
                })
            }
        }
        try deliverBatch(0)
        // Rows delivered after the cutoff, and a finished row not yet delivered, stay.
        let pending = try queue.enqueue([download("pending")], for: "app") { _, _ in nil }
        var row = try pending[0].result.get()
        row.state = .finished
        try queue.save(row)
        #expect(try queue.pruneDelivered(before: Date().addingTimeInterval(-60)) == 0)
        #expect(try queue.pruneDelivered(before: Date().addingTimeInterval(1)) == 50_000)
        #expect(try queue.pendingCompletions(for: "app").map(\.identifier) == ["pending"])
        let afterFirst = bytesOnDisk()

        try deliverBatch(1)
        #expect(try queue.pruneDelivered(before: Date().addingTimeInterval(1)) == 50_000)
        let afterSecond = bytesOnDisk()
        #expect(afterSecond <= afterFirst + afterFirst / 4, "\(afterFirst) then \(afterSecond) bytes")
        #expect(try queue.downloads(for: "app").map(\.identifier) == ["pending"])
    }
}

@Suite(.ownThreads) struct QueueTurnTests {
    /// A download already due but held back by its host's cap does not count as a wake-up: the engine would turn
    /// without pause until the host frees (it did, at 100% of a core, while transfers to that host failed fast).
    @Test func aDueDownloadHeldBackByItsHostIsNoReasonToWake() throws {
        let (store, _) = try QueueStoreTests().store()
        let results = try store.enqueue(
            [QueueStoreTests().download("a"), QueueStoreTests().download("b")], for: "app") { _, _ in nil }
        var waiting = try results[0].result.get()
        waiting.state = .waitingForNetwork
        waiting.retryAt = Date(timeIntervalSinceNow: -1)
        try store.save(waiting)
        var later = try results[1].result.get()
        later.state = .waitingToRetry
        later.retryAt = Date(timeIntervalSinceNow: 30)
        try store.save(later)
        let snapshot = try store.snapshot(now: Date(), apps: ["app"], saturatedHosts: ["a.example.com"], backgroundLimit: 2)
        #expect(snapshot.runnable.isEmpty)
        #expect(snapshot.nextRetry.map { abs($0.timeIntervalSince(later.retryAt!)) < 0.01 } == true)
        // The same download is runnable once its host has room.
        #expect(try store.snapshot(now: Date(), apps: ["app"], backgroundLimit: 2).runnable.map(\.identifier) == ["a"])
    }

    /// Downloads waiting for the network become due at once when it changes (every one) or when their host is reached
    /// (that host's only); those waiting to retry keep their time.
    @Test func wakingWaitsForTheNetworkMakesThemDue() throws {
        let (store, _) = try QueueStoreTests().store()
        let results = try store.enqueue(
            ["a", "b", "c"].map {
                Download(identifier: $0, url: "https://\($0).example.com/x", applicationGroupIdentifier: "g", fileSize: 10)
            }, for: "app") { _, _ in nil }
        var rows = try results.map { try $0.result.get() }
        let later = Date(timeIntervalSinceNow: 30)
        for index in rows.indices {
            rows[index].state = index == 2 ? .waitingToRetry : .waitingForNetwork
            rows[index].retryAt = later
            rows[index].offlineSince = Date(timeIntervalSinceNow: -60)
            try store.save(rows[index])
        }
        let now = Date()
        #expect(try store.wakeWaitingForNetwork(hosts: [rows[0].host], now: now) == 1)
        #expect(try store.snapshot(now: now, apps: ["app"], backgroundLimit: 3).runnable.map(\.identifier) == ["a"])
        #expect(try store.wakeWaitingForNetwork(now: now) == 1)
        #expect(try store.snapshot(now: now, apps: ["app"], backgroundLimit: 3).runnable.map(\.identifier) == ["a", "b"])
        // The wait's start survives the row's round trip.
        #expect(try store.downloads(for: "app").allSatisfy { $0.offlineSince != nil })
    }
}
