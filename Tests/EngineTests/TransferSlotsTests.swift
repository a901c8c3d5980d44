@testable import Engine
@testable import Queue
import Testing
import Vocabulary

/// The transfer slots and a turn's choice as values: every rule checked with no queue, no clock and no thread.
@Suite struct TransferSlotsTests {
    let limits = TransferSlots.Limits(total: 2, perHost: 1)

    func queued(_ identifier: String, _ host: String, foreground: Bool = false) -> QueuedDownload {
        QueuedDownload(
            appIdentifier: "app", sequence: 0,
            download: Download(
                identifier: identifier, url: "http://\(host)/\(identifier)",
                applicationGroupIdentifier: "group.com.example.levels", fileSize: 0),
            foreground: foreground)
    }

    /// A download runs, gives its slot away once its body ended (while fewer than the limit finish), and is gone once
    /// its task ended; the counts per host and per app follow.
    @Test func aDownloadGoesFromRunningToFinishingToGone() {
        var slots = TransferSlots()
        let a = queued("a", "one.example")
        let added = slots.add(a.uniqueIdentifier, host: a.host, app: "app")
        let addedAgain = slots.add(a.uniqueIdentifier, host: a.host, app: "app")
        #expect(added && !addedAgain, "runs once")
        #expect(slots.entries[a.uniqueIdentifier]?.phase == .running)
        #expect(slots.slotsTaken == 1 && slots.perHost == [a.host: 1] && slots.perApp == ["app": 1])
        #expect(!slots.couldStart(queued("b", "one.example"), limits), "its host is full")
        #expect(slots.couldStart(queued("c", "two.example"), limits))
        #expect(slots.saturatedHosts(limits) == [a.host])

        let freed = slots.bodyEnded(a.uniqueIdentifier, limit: 1)
        let freedAgain = slots.bodyEnded(a.uniqueIdentifier, limit: 1)
        #expect(freed && !freedAgain, "a slot is freed once")
        #expect(slots.entries[a.uniqueIdentifier]?.phase == .finishing)
        #expect(slots.slotsTaken == 0 && slots.perHost.isEmpty && slots.perApp.isEmpty && slots.finishing == 1)
        #expect(slots.holds(a.uniqueIdentifier), "it runs until its task ends")

        let b = queued("b", "one.example")
        let addedB = slots.add(b.uniqueIdentifier, host: b.host, app: "app")
        let freedB = slots.bodyEnded(b.uniqueIdentifier, limit: 1)
        #expect(addedB && !freedB, "one finishes already: b keeps its slot")
        slots.remove(a.uniqueIdentifier)
        #expect(slots.finishing == 0 && !slots.holds(a.uniqueIdentifier))
        let freedLater = slots.bodyEnded(b.uniqueIdentifier, limit: 1)
        #expect(freedLater)
        slots.remove(b.uniqueIdentifier)
        #expect(slots.entries.isEmpty && slots.slotsTaken == 0 && slots.finishing == 0)
    }

    /// The reserve starts what fits the limits, in order, marks its copy as the turn will mark its row, and keeps it
    /// held until a turn took it as started early; what runs already or was cancelled never starts from it.
    @Test func theReserveStartsWhatFitsOnceAndOnlyThat() {
        var slots = TransferSlots()
        let a = queued("a", "one.example"), b = queued("b", "one.example"), c = queued("c", "two.example")
        _ = slots.add(a.uniqueIdentifier, host: a.host, app: "app")
        slots.reserve([a, b, c])
        #expect(slots.reserved.map(\.identifier) == ["b", "c"], "a runs already")
        let next = slots.takeReserved(limits)
        #expect(next?.identifier == "c" && next?.state == .downloading && next?.attempts == 1 && next?.retryAt == nil)
        let none = slots.takeReserved(limits)
        #expect(none == nil, "both slots are taken")
        #expect(slots.startedEarly.keys.contains(c.uniqueIdentifier))
        slots.remove(c.uniqueIdentifier)
        #expect(slots.holds(c.uniqueIdentifier), "ended, its row unmarked: still held")
        let early = slots.takeStartedEarly()
        let earlyAgain = slots.takeStartedEarly()
        #expect(early.map(\.identifier) == ["c"] && earlyAgain.isEmpty)
        #expect(!slots.holds(c.uniqueIdentifier))

        let cancelledReserved = slots.cancel(b.uniqueIdentifier)
        #expect(!cancelledReserved && slots.reserved.isEmpty, "b was only reserved")
        let cancelledRunning = slots.cancel(a.uniqueIdentifier)
        #expect(cancelledRunning && slots.entries[a.uniqueIdentifier]?.cancelled == true)
        slots.remove(a.uniqueIdentifier)
        slots.reserve([b])
        slots.dropReserve()
        let dropped = slots.takeReserved(limits)
        #expect(dropped == nil && slots.entries.isEmpty)
    }

    /// A turn starts foreground downloads whatever the limits (each still takes a slot), background ones while a slot
    /// and a slot of their host are free, reserves the rest up to its limit, and says when it turned some away.
    @Test func aTurnStartsWhatFitsReservesTheRestAndSaysWhatItTurnedAway() {
        var slots = TransferSlots()
        _ = slots.add("running", host: "one.example", app: "app")
        var choice = TurnChoice(slots: slots, limits: limits, reserve: [], reserveLimit: 2)
        #expect(choice.backgroundLimit == 1 + 2 && !choice.reserveFull && !choice.slotsFull)
        let chosen = choice.choose([
            queued("f", "one.example", foreground: true), queued("b", "one.example"), queued("c", "two.example"),
            queued("d", "two.example"), queued("e", "three.example"), queued("g", "four.example"),
        ])
        // The foreground one takes the last slot: the rest wait, in the reserve or turned away.
        #expect(chosen.map(\.identifier) == ["f"])
        #expect(choice.reserve.map(\.identifier) == ["b", "c"])
        #expect(choice.turnedAway && choice.reserveFull && choice.slotsFull)
        #expect(choice.backgroundLimit == 0)

        var free = TurnChoice(slots: slots, limits: limits, reserve: [], reserveLimit: 1)
        let fitting = free.choose([queued("b", "one.example"), queued("c", "two.example"), queued("d", "two.example")])
        #expect(fitting.map(\.identifier) == ["c"] && free.reserve.map(\.identifier) == ["b"] && free.turnedAway)

        var quiet = TurnChoice(slots: TransferSlots(), limits: limits, reserve: [], reserveLimit: 4)
        let started = quiet.choose([queued("a", "one.example")])
        #expect(started.count == 1 && !quiet.turnedAway && quiet.reserve.isEmpty)
    }

    /// The state machine's events and actions: a turn's choice starts what it records running (once) and puts its
    /// reserve in place; a body's end gives its slot to the next reserved download that fits and wakes the engine,
    /// saying when the reserve runs low; a task's end frees what its body's end did not.
    @Test func eventsInActionsOut() {
        var slots = TransferSlots()
        let limits = TransferSlots.Limits(total: 2, perHost: 2)
        let a = queued("a", "one.example"), b = queued("b", "one.example")
        let c = queued("c", "one.example"), d = queued("d", "one.example")
        #expect(slots.handle(.turnChose(started: [a, b], reserve: [c, d])) == [.start(a), .start(b)])
        #expect(slots.handle(.turnChose(started: [a], reserve: [c, d])).isEmpty, "a runs already")
        #expect(slots.reserved.map(\.identifier) == ["c", "d"])

        var startedC = c
        startedC.state = .downloading
        startedC.attempts += 1
        #expect(
            slots.handle(.bodyEnded(a.uniqueIdentifier, limits: limits)) == [.start(startedC), .wake(reserveLow: false)])
        #expect(slots.handle(.bodyEnded(a.uniqueIdentifier, limits: limits)).isEmpty, "a slot is freed once")
        // Two finish (a and b): c's body end keeps its slot until a's task ends.
        var startedD = d
        startedD.state = .downloading
        startedD.attempts += 1
        #expect(
            slots.handle(.bodyEnded(b.uniqueIdentifier, limits: limits)) == [.start(startedD), .wake(reserveLow: true)])
        #expect(slots.handle(.bodyEnded(c.uniqueIdentifier, limits: limits)).isEmpty)
        #expect(slots.handle(.taskEnded(a.uniqueIdentifier)).isEmpty)
        #expect(
            slots.handle(.bodyEnded(c.uniqueIdentifier, limits: limits)) == [.wake(reserveLow: true)],
            "nothing left in reserve")
        #expect(slots.takeStartedEarly().map(\.identifier).sorted() == ["c", "d"])
    }

    /// A cancel stops a running download's task, drops a reserved one, and does nothing to one it does not know.
    @Test func aCancelStopsARunningTaskAndDropsAReservedOne() {
        var slots = TransferSlots()
        let a = queued("a", "one.example"), b = queued("b", "two.example")
        _ = slots.handle(.turnChose(started: [a], reserve: [b]))
        #expect(slots.handle(.cancelled(a.uniqueIdentifier)) == [.cancelTask(a.uniqueIdentifier)])
        #expect(slots.handle(.cancelled(b.uniqueIdentifier)).isEmpty && slots.reserved.isEmpty)
        #expect(slots.handle(.cancelled("unknown")).isEmpty)
        #expect(slots.handle(.taskEnded(a.uniqueIdentifier)).isEmpty && slots.entries.isEmpty)
    }
}
