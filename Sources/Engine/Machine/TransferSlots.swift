import Queue

/// The engine's transfer slots as a state machine: which downloads run, which hold a slot, which were started from
/// the reserve without their row saying so yet, and the reserve itself. Events come in (`handle`: a turn's choice, a
/// body's end, a task's end, a cancel) and actions go out (start a transfer, cancel a task, wake the engine). No
/// I/O, no clock, no lock: a part of `EngineState`, whose driver carries out the actions; the tests drive
/// it directly.
///
/// A download's state, explicit:
/// - `reserved`: chosen by the last turn beyond the free slots, not started, its row still queued;
/// - `running`, with `rowMarked` false while it was started from the reserve and the next turn has yet to mark its
///   row moving (`takeStartedEarly`), true once a turn did (or started it itself);
/// - `finishing`: its body ended and its slot went to the next; its file is synced and its outcome recorded;
/// - gone (`remove`): its outcome is with the engine.
///
/// The limits count transfers on the network, so one whose body has ended gives its slot away (`bodyEnded`), unless
/// as many as the limit are finishing already.
struct TransferSlots: Sendable {
    typealias Limits = SlotLimits

    /// What happens to the slots.
    enum Event: Sendable {
        /// A turn marked `started` moving and chose `reserve` beyond the free slots (replacing the last turn's).
        case turnChose(started: [QueuedDownload], reserve: [QueuedDownload])
        /// A transfer's body ended: its slot may go to the next reserved download that fits `limits`.
        case bodyEnded(String, limits: Limits)
        /// A transfer's task ended: the download no longer runs.
        case taskEnded(String)
        /// A download was cancelled: reserved, it is dropped; running, its task is stopped.
        case cancelled(String)
    }

    /// What the slots' owner does after an event.
    enum Action: Sendable, Equatable {
        /// Start the transfer of a download now recorded running.
        case start(QueuedDownload)
        /// Cancel a running download's task.
        case cancelTask(String)
        /// Tell the engine's loop that a slot changed hands; `reserveLow` when the reserve no longer lasts until the
        /// next turn (`reserveLasts`), which then comes at once rather than at its pace.
        case wake(reserveLow: Bool)
    }

    /// Takes an event and returns what to do, in order.
    mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .turnChose(let started, let reserve):
            let starting = started.filter { add($0.uniqueIdentifier, host: $0.host, app: $0.appIdentifier) }
            self.reserve(reserve)
            return starting.map { .start($0) }
        case .bodyEnded(let uniqueIdentifier, let limits):
            guard bodyEnded(uniqueIdentifier, limit: limits.total) else { return [] }
            let next = takeReserved(limits).map { [Action.start($0)] } ?? []
            return next + [.wake(reserveLow: !reserveLasts(limits))]
        case .taskEnded(let uniqueIdentifier):
            remove(uniqueIdentifier)
            return []
        case .cancelled(let uniqueIdentifier):
            return cancel(uniqueIdentifier) ? [.cancelTask(uniqueIdentifier)] : []
        }
    }

    /// Whether the reserve holds enough to fill the slots that free while the next turn waits
    /// (`EngineDriver.paceNextTurn`): a quarter of the limit at least.
    func reserveLasts(_ limits: Limits) -> Bool { reserved.count >= max(1, limits.total / 4) }

    enum Phase: Sendable, Hashable {
        case running
        case finishing
    }

    struct Entry: Sendable, Hashable {
        var host: String
        var app: String
        var phase = Phase.running
        /// A cancel came (before or after its task existed).
        var cancelled = false
    }

    private(set) var entries: [String: Entry] = [:]
    private(set) var slotsTaken = 0
    private(set) var finishing = 0
    /// Slots taken per host, and per app.
    private(set) var perHost: [String: Int] = [:]
    private(set) var perApp: [String: Int] = [:]
    /// Not running, row queued: started in this order as slots free.
    private(set) var reserved: [QueuedDownload] = []
    /// Started from the reserve, their rows not yet marked moving: the next turn marks them. Until then the queue says
    /// they wait, so a turn that reads them so must not start them again, even once they have ended.
    private(set) var startedEarly: [String: QueuedDownload] = [:]

    /// Whether the download runs, or ran without its row saying so yet.
    func holds(_ uniqueIdentifier: String) -> Bool {
        entries[uniqueIdentifier] != nil || startedEarly[uniqueIdentifier] != nil
    }

    /// Whether a download could start now: a free slot, and a free slot for its host (foreground ones always can).
    func couldStart(_ download: QueuedDownload, _ limits: Limits) -> Bool {
        download.foreground
            || (slotsTaken < limits.total && perHost[download.host, default: 0] < limits.perHost)
    }

    /// The hosts whose slots are all taken.
    func saturatedHosts(_ limits: Limits) -> Set<String> { Set(perHost.filter { $0.value >= limits.perHost }.keys) }

    /// Records a download a turn started; false, changing nothing, when it runs already (the reserve started it
    /// while the turn chose it from the queue as it was).
    mutating func add(_ uniqueIdentifier: String, host: String, app: String) -> Bool {
        guard !holds(uniqueIdentifier) else { return false }
        entries[uniqueIdentifier] = Entry(host: host, app: app)
        slotsTaken += 1
        perHost[host, default: 0] += 1
        perApp[app, default: 0] += 1
        return true
    }

    /// Replaces the reserve with a turn's, leaving out what runs already.
    mutating func reserve(_ downloads: [QueuedDownload]) {
        reserved = downloads.filter { !holds($0.uniqueIdentifier) }
    }

    mutating func dropReserve() { reserved = [] }

    /// A transfer's body ended: its slot is freed unless as many as `limit` are finishing already. Returns whether
    /// it was.
    mutating func bodyEnded(_ uniqueIdentifier: String, limit: Int) -> Bool {
        guard let entry = entries[uniqueIdentifier], entry.phase == .running, finishing < limit else {
            return false
        }
        entries[uniqueIdentifier]?.phase = .finishing
        freeSlot(of: entry)
        finishing += 1
        return true
    }

    /// Takes the first reserved download that fits the free slots and records it as running, to be marked moving by
    /// the next turn (`takeStartedEarly`). Its copy says what the mark will write.
    mutating func takeReserved(_ limits: Limits) -> QueuedDownload? {
        guard slotsTaken < limits.total else { return nil }
        // The first that fits, in place: what a turn started meanwhile is no longer reserved, dropped when met.
        var index = reserved.startIndex
        while index < reserved.endIndex {
            if holds(reserved[index].uniqueIdentifier) {
                reserved.remove(at: index)
            } else if perHost[reserved[index].host, default: 0] < limits.perHost {
                break
            } else {
                index += 1
            }
        }
        guard index < reserved.endIndex else { return nil }
        var next = reserved.remove(at: index)
        next.state = .downloading
        next.attempts += 1
        next.retryAt = nil
        _ = add(next.uniqueIdentifier, host: next.host, app: next.appIdentifier)
        startedEarly[next.uniqueIdentifier] = next
        return next
    }

    /// The transfers started from the reserve since the last call, for the caller's transaction to mark moving: it
    /// must do so before it reads the queue.
    mutating func takeStartedEarly() -> [QueuedDownload] {
        defer { startedEarly = [:] }
        return Array(startedEarly.values)
    }

    /// A transfer's task ended: the download no longer runs.
    mutating func remove(_ uniqueIdentifier: String) {
        guard let entry = entries.removeValue(forKey: uniqueIdentifier) else { return }
        if entry.phase == .running { freeSlot(of: entry) } else { finishing -= 1 }
    }

    /// A cancel: a reserved download is dropped; a running one is marked, and true says its task must be cancelled.
    mutating func cancel(_ uniqueIdentifier: String) -> Bool {
        reserved.removeAll { $0.uniqueIdentifier == uniqueIdentifier }
        guard entries[uniqueIdentifier] != nil else { return false }
        entries[uniqueIdentifier]?.cancelled = true
        return true
    }

    private mutating func freeSlot(of entry: Entry) {
        slotsTaken -= 1
        perHost[entry.host, default: 1] -= 1
        if perHost[entry.host] == 0 { perHost[entry.host] = nil }
        perApp[entry.app, default: 1] -= 1
        if perApp[entry.app] == 0 { perApp[entry.app] = nil }
    }
}

extension TurnChoice {
    /// A choice starting from the slots as they are now.
    init(slots: TransferSlots, limits: TransferSlots.Limits, reserve: [QueuedDownload], reserveLimit: Int) {
        self.init(limits: limits, taken: slots.slotsTaken, perHost: slots.perHost, reserve: reserve, reserveLimit: reserveLimit)
    }
}
