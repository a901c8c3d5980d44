import Delivery
@testable import Engine
import Foundation
@testable import Queue
import Testing
import Transfer
import Vocabulary

/// The engine's state machine with events in and actions out: no queue, no clock, no thread, no socket. What the
/// driver then does with each action (a task, a transaction, a post) is `EnginePartsTests`' and the daemon's.
@Suite struct EngineStateTests {
    let limits = SlotLimits(total: 1, perHost: 1)
    let app = AppRecord(
        appIdentifier: "app", appGroupIdentifier: "group.com.example.levels", pluginPath: "/nonexistent.so",
        manifestURL: "http://127.0.0.1/manifest", domainAllowList: [], downloadAllowance: 1 << 40,
        essentialDownloadAllowance: 1 << 40, allowInsecureLoopback: true)

    func chosen(_ identifier: String, _ host: String = "one.example") -> EngineState.Chosen {
        let queued = QueuedDownload(
            appIdentifier: "app", sequence: 0,
            download: Download(
                identifier: identifier, url: "http://\(host)/\(identifier)",
                applicationGroupIdentifier: "group.com.example.levels", fileSize: 0))
        return EngineState.Chosen(queued, app: app, policy: app.policy)
    }

    func outcome(_ chosen: EngineState.Chosen, completes: Bool = true, charge: Int64? = nil) -> TransferOutcome {
        var row = chosen.download
        row.state = completes ? .finished : .waitingToRetry
        return TransferOutcome(
            row: row, event: completes ? .finished(row.status) : nil, completes: completes,
            partialPath: "/partial/\(row.identifier)", finishedPath: "/finished/\(row.identifier)", charge: charge)
    }

    /// Each action as a word and its subject, for comparing sequences.
    func names(_ actions: [EngineState.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .start(let chosen): "start \(chosen.download.identifier)"
            case .cancelTask(let uniqueIdentifier): "cancel \(uniqueIdentifier)"
            case .wake(let kinds):
                "wake" + (kinds.contains(.reserveLow) ? " reserveLow" : "")
                    + (kinds.contains(.transferEnded) ? " ended" : "")
            case .writeTurn(let outcomes, let startedEarly):
                "write \(outcomes.map(\.row.identifier)) early \(startedEarly.map(\.identifier).sorted())"
            case .ask(_, let row, _): "ask \(row.identifier)"
            case .save(let row): "save \(row.identifier)"
            case .charge(let app, let bytes, _): "charge \(app) \(bytes)"
            case .discardFiles(let partialPath, _): "discard \(partialPath)"
            case .tell(let event):
                if case .finished(let status) = event { "tell finished \(status.identifier)" } else { "tell" }
            case .recorded(let app): "recorded \(app)"
            case .announceLaunchIfReady(let apps): "announce \(apps.sorted())"
            case .startDelivery(let app, let batchSize): "deliver \(app) \(batchSize)"
            }
        }
    }

    /// The race the engine once had, closed by construction: a turn's starts and its reserve are put in place by one
    /// event, so a transfer whose body ends the moment it started gives its slot to this turn's reserve; the next
    /// turn then takes its outcome and marks the reserved one moving.
    @Test func aFreedSlotFindsTheReserveOfTheTurnThatStartedIt() {
        var state = EngineState()
        let first = chosen("first"), second = chosen("second")
        let started = state.handle(.turnWritten(recorded: [], gone: [], started: [first], reserve: [second]))
        #expect(names(started) == ["start first"])
        #expect(names(state.handle(.bodyEnded(first.download.uniqueIdentifier, limits: limits)))
            == ["start second", "wake reserveLow"])
        #expect(state.slots.startedEarly[second.download.uniqueIdentifier]?.state == .downloading)
        #expect(names(state.handle(.transferEnded(first.download.uniqueIdentifier, .outcome(outcome(first)))))
            == ["wake"])
        #expect(names(state.handle(.turnBegins)) == ["write [\"first\"] early [\"second\"]"])
        #expect(names(state.handle(.turnBegins)) == ["write [] early []"], "taken once")
    }

    /// A transfer whose body has ended gives its slot (and its host's) to the next, while at most as many as the
    /// limit finish so at once; it still counts as running until its task ends.
    @Test func aTransferWhoseBodyEndedGivesItsSlotToTheNext() {
        var state = EngineState()
        let a = chosen("a"), b = chosen("b"), c = chosen("c")
        _ = state.handle(.turnWritten(recorded: [], gone: [], started: [a], reserve: []))
        #expect(!state.slots.couldStart(b.download, limits))
        #expect(!state.handle(.bodyEnded(a.download.uniqueIdentifier, limits: limits)).isEmpty)
        #expect(state.slots.couldStart(b.download, limits))
        #expect(state.slots.entries.keys.sorted() == [a.download.uniqueIdentifier])
        #expect(state.slots.perHost.isEmpty && state.slots.perApp.isEmpty)
        _ = state.handle(.turnWritten(recorded: [], gone: [], started: [b], reserve: []))
        // One finishes already: the second keeps its slot through its sync.
        #expect(state.handle(.bodyEnded(b.download.uniqueIdentifier, limits: limits)).isEmpty)
        #expect(!state.slots.couldStart(c.download, limits))
        _ = state.handle(.transferEnded(a.download.uniqueIdentifier, nil))
        #expect(!state.handle(.bodyEnded(b.download.uniqueIdentifier, limits: limits)).isEmpty)
        #expect(state.handle(.bodyEnded(b.download.uniqueIdentifier, limits: limits)).isEmpty)
        #expect(state.slots.couldStart(c.download, limits) && !state.isIdle)
    }

    /// A download is recorded running before its task exists: a cancel in between marks it, which the driver reads
    /// when it attaches the task; once its task ended, a cancel has nothing to stop.
    @Test func aCancelBeforeTheTaskExistsIsKeptForIt() {
        var state = EngineState()
        let a = chosen("a"), b = chosen("b")
        _ = state.handle(.turnWritten(recorded: [], gone: [], started: [a], reserve: [b]))
        let cancelled = names(state.handle(.cancelled(a.download.uniqueIdentifier)))
        #expect(cancelled == ["cancel \(a.download.uniqueIdentifier)"])
        #expect(state.slots.entries[a.download.uniqueIdentifier]?.cancelled == true)
        #expect(names(state.handle(.cancelled(b.download.uniqueIdentifier))).isEmpty, "reserved: dropped")
        _ = state.handle(.transferEnded(a.download.uniqueIdentifier, nil))
        #expect(state.handle(.cancelled(a.download.uniqueIdentifier)).isEmpty && state.isIdle)
        #expect(state.handle(.bodyEnded(a.download.uniqueIdentifier, limits: limits)).isEmpty, "b never starts")
    }

    /// The reserve starts only what fits the limits, never what runs already, and nothing cancelled; what a turn
    /// started after the reserve was made is not started again from it.
    @Test func theReserveKeepsToTheLimitsAndStartsEachDownloadOnce() {
        let limits = SlotLimits(total: 2, perHost: 1)
        var state = EngineState()
        let a = chosen("a"), b = chosen("b"), c = chosen("c", "two.example"), d = chosen("d", "two.example")
        _ = state.handle(.turnWritten(recorded: [], gone: [], started: [a], reserve: [a, b, c]))
        #expect(state.slots.reserved.map(\.identifier) == ["b", "c"], "a runs already")
        // A turn started `c` meanwhile: dropped from the reserve, not started again.
        _ = state.handle(.turnWritten(recorded: [], gone: [], started: [c], reserve: [b, c, d]))
        _ = state.handle(.transferEnded(a.download.uniqueIdentifier, nil))
        let e = chosen("e", "three.example")
        _ = state.handle(.turnWritten(recorded: [], gone: [], started: [e], reserve: [b, c, d]))
        #expect(names(state.handle(.bodyEnded(c.download.uniqueIdentifier, limits: limits))) == ["start b", "wake"],
                "b's host is free; c runs already; d is left for the next")
        #expect(state.handle(.bodyEnded(c.download.uniqueIdentifier, limits: limits)).isEmpty, "a body ends once")
        _ = state.handle(.cancelled(d.download.uniqueIdentifier))
        _ = state.handle(.transferEnded(b.download.uniqueIdentifier, nil))
        #expect(state.slots.reserved.isEmpty, "d was cancelled while reserved")
        _ = state.handle(.turnWritten(recorded: [], gone: [], started: [], reserve: [d]))
        _ = state.handle(.reserveDropped)
        #expect(state.slots.reserved.isEmpty)
    }

    /// An outcome is told, and its completion delivered, only once a turn recorded it; one whose row was cancelled
    /// meanwhile has its files deleted instead; a turn that failed says so, and nothing is told.
    @Test func anOutcomeIsToldOnlyOnceItsTurnCommitted() {
        var state = EngineState()
        let a = chosen("a"), b = chosen("b"), c = chosen("c")
        _ = state.handle(.turnWritten(recorded: [], gone: [], started: [a], reserve: []))
        #expect(names(state.handle(.transferEnded(a.download.uniqueIdentifier, .outcome(outcome(a, charge: 1000)))))
            == ["charge app 1000", "wake"])
        guard case .writeTurn(let taken, _)? = state.handle(.turnBegins).first else {
            Issue.record("a turn writes")
            return
        }
        let gone = outcome(b), waiting = outcome(c, completes: false)
        #expect(names(state.handle(.turnWritten(
            recorded: taken + [gone, waiting], gone: [b.download.uniqueIdentifier], started: [], reserve: [])))
            == ["tell finished a", "recorded app", "discard /partial/b", "announce [\"app\"]", "wake ended"])
        #expect(names(state.handle(.turnFailed(recorded: [waiting], error: "disk full"))) == ["tell", "wake ended"])
        #expect(state.handle(.turnFailed(recorded: [], error: "disk full")).isEmpty)
    }

    /// A challenge is the engine's to answer: the transfer ends with it handed over, so the engine is never idle in
    /// between; the answer's outcome waits for the next turn, and an answer comes once.
    @Test func aChallengeIsAskedAboutAndItsAnswerRecorded() {
        var state = EngineState()
        let a = chosen("a")
        _ = state.handle(.turnWritten(recorded: [], gone: [], started: [a], reserve: []))
        let challenge = ServerChallenge(host: "one.example", port: 80, scheme: "Basic", realm: "levels")
        let ending = TransferJob.Ending.challenged(challenge, row: a.download, otherwise: outcome(a))
        #expect(names(state.handle(.transferEnded(a.download.uniqueIdentifier, ending))) == ["ask a", "wake"])
        #expect(!state.isIdle && state.slots.entries.isEmpty)
        let again = outcome(a).queuedAgain(a.download)
        #expect(again.row.state == .queued && again.event == nil && !again.completes)
        #expect(names(state.handle(.challengeAnswered(a.download.uniqueIdentifier, again))) == ["wake"])
        #expect(state.handle(.challengeAnswered(a.download.uniqueIdentifier, again)).isEmpty, "answered once")
        #expect(state.isIdle && state.outcomes.map(\.row.state) == [.queued])
    }

    /// Progress is saved while the download runs, never once it was cancelled or has ended: its row is gone.
    @Test func progressIsSavedOnlyWhileTheDownloadRuns() {
        var state = EngineState()
        let a = chosen("a"), b = chosen("b", "two.example")
        _ = state.handle(.turnWritten(recorded: [], gone: [], started: [a, b], reserve: []))
        #expect(names(state.handle(.progressed(a.download))) == ["save a"])
        _ = state.handle(.cancelled(a.download.uniqueIdentifier))
        #expect(state.handle(.progressed(a.download)).isEmpty)
        _ = state.handle(.transferEnded(b.download.uniqueIdentifier, nil))
        #expect(state.handle(.progressed(b.download)).isEmpty)
        #expect(state.handle(.progressed(chosen("never").download)).isEmpty)
    }

    /// One delivery runs per app at a time: at once for a receiver that takes completions so, else when the batch
    /// is ready; a failed one is told and waits its backoff; the engine is not idle while one runs.
    @Test func deliveriesStartWhenDueOneAtATimeAndBackOffAfterAFailure() {
        var state = EngineState()
        let start = ContinuousClock.now
        let delay = Duration.seconds(2)
        #expect(names(state.handle(.completionRecorded("app", atOnce: true, at: start))) == ["deliver app 32"])
        #expect(!state.isIdle && state.isDelivering)
        #expect(state.handle(.completionRecorded("app", atOnce: true, at: start)).isEmpty, "one at a time")
        #expect(names(state.handle(.deliveryEnded("app", error: "disk full", at: start))) == ["tell", "wake"])
        #expect(state.isIdle)
        #expect(state.handle(.completionRecorded("app", atOnce: true, at: start)).isEmpty, "backing off")
        #expect(state.nextDeliveryDeadline(delay: delay, at: start) == start + .seconds(1))
        let retried = state.handle(.completionRecorded("app", atOnce: true, at: start + .seconds(1)))
        #expect(names(retried) == ["deliver app 32"])
        #expect(names(state.handle(.deliveryEnded("app", error: nil, at: start + .seconds(1)))) == ["wake"])

        // For the extension: batched while the app's transfers run, due once the oldest has waited the delay.
        let queue = AppDelivery.Queue(pendingCompletions: 1, hasActiveDownloads: true, receivesAtOnce: false)
        let read = ["other": (queue: queue, claimsHeld: false)]
        #expect(state.handle(.completionRecorded("other", atOnce: false, at: start)).isEmpty)
        #expect(state.handle(.queueRead(read, readSince: start, delay: delay, at: start + .seconds(1))).isEmpty)
        let due = state.handle(.queueRead(read, readSince: start, delay: delay, at: start + delay))
        #expect(names(due) == ["deliver other 32"])
        _ = state.handle(.appRemoved("other"))
        #expect(state.isDelivering, "a delivery running ends on its own")
        #expect(state.handle(.draining(true)).isEmpty && state.leftPending("other") == nil)
    }
}
