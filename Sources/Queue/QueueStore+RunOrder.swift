import Foundation
import GRDB
import HostVocabulary
import Vocabulary

/// The run order: what may start now, best first, and when a waiting download is due. It is scheduling policy, but it
/// stays beside the storage: it is a walk of the run order's index that stops at what the engine can start, so that a
/// turn costs what it starts rather than the queue's length, and no layer above could walk an index.
extension QueueStore {
    /// What the engine asks of the queue at every turn, read in one transaction: what may start now, and per app
    /// whether it has downloads active and how many completions wait.
    public struct Snapshot: Sendable {
        /// Downloads that may start now, best first (see `runnable`).
        public var runnable: [QueuedDownload]
        /// Per app, the completions waiting that nobody holds, counted up to `Snapshot.countLimit`.
        public var pendingCompletions: [String: Int]
        public var appsWithActiveDownloads: Set<String>
        /// Apps with a completion held by a receiver whose callback may still be running (`QueuedDownload.claim`).
        public var appsWithClaimedCompletions: Set<String> = []
        /// The next moment, after the snapshot was read, that a waiting download becomes runnable. One already due
        /// but not started (its host is at its cap) is not counted: it starts when a transfer ends, which wakes the
        /// engine anyway, and counting it would have the engine turn without pause until then.
        public var nextRetry: Date?

        /// Pending completions are counted up to this many: the engine only compares the count with a batch's size
        /// (at most `BatchPace.maximum`, which a test holds to this), and a count that went further would cost every
        /// turn time in proportion to what is pending.
        public static let countLimit = 256

        public func hasWork(_ appIdentifier: String) -> Bool {
            appsWithActiveDownloads.contains(appIdentifier) || pendingCompletions[appIdentifier, default: 0] > 0
                || appsWithClaimedCompletions.contains(appIdentifier)
        }
    }

    /// Reads a `Snapshot` for `apps`; the parameters are `runnable`'s. For tests: the engine reads it in `turn`.
    @_spi(Testing) public func snapshot(
        now: Date, apps: Set<String>, excluding: Set<String> = [], saturatedHosts: Set<String> = [],
        backgroundLimit: Int? = nil, running: [String: Int] = [:], conditions: NetworkConditions = NetworkConditions()
    ) throws -> Snapshot {
        try database.read { db in
            try Self.snapshot(
                db, now: now, apps: apps, excluding: excluding, saturatedHosts: saturatedHosts,
                backgroundLimit: backgroundLimit, running: running, conditions: conditions)
        }
    }

    /// An engine's turn: records transfers' outcomes (as `record`), reads a `Snapshot` of what is left (the other
    /// parameters are `runnable`'s, and at most `choice.backgroundLimit` background downloads are read), and marks
    /// moving what `choice` picks of its `runnable`, leaving in `choice` what it reserved and whether it turned some
    /// away. Returns the snapshot, the downloads marked moving, and the unique identifiers of the outcomes whose row is
    /// gone (cancelled while it ran).
    ///
    /// With outcomes to record, the turn is one transaction of the writer: every next transfer waits for the turn,
    /// and a read of its own cost a reader's connection and a transaction besides the write's (docs/performance/DECISIONS.md #8);
    /// the snapshot also sees the outcomes it recorded. With none, the snapshot is read on a reader and the writer
    /// is taken only for what the choice picked (marking moving checks that each is still waiting): a turn with
    /// nothing to write must not wait behind another writer, such as a content request's commit of 100,000 rows.
    ///
    /// `startedEarly` are transfers the engine started since its last turn without a turn marking them moving (from
    /// its reserve, the moment a slot freed): they are marked before the outcomes are saved, so that an outcome of
    /// theirs recorded in the same turn stands; one whose outcome is among them is saved once, by its outcome.
    public func turn(
        recording outcomes: [QueuedDownload], startedEarly: [QueuedDownload] = [], now: Date, apps: Set<String>,
        excluding: Set<String>, saturatedHosts: Set<String>, running: [String: Int] = [:],
        conditions: NetworkConditions = NetworkConditions(), choice: inout TurnChoice
    ) throws -> (snapshot: Snapshot, started: [QueuedDownload], gone: Set<String>) {
        var deciding = choice
        defer { choice = deciding }
        return try turn(
            recording: outcomes, startedEarly: startedEarly, now: now, apps: apps, excluding: excluding,
            saturatedHosts: saturatedHosts, backgroundLimit: choice.backgroundLimit, running: running,
            conditions: conditions
        ) { deciding.choose($0) }
    }

    /// The turn with its choice as a function of the runnable downloads: for tests, which also act between the read
    /// and the marks (a cancel). `choose` must only choose.
    @_spi(Testing) public func turn(
        recording outcomes: [QueuedDownload], startedEarly: [QueuedDownload] = [], now: Date, apps: Set<String>,
        excluding: Set<String>, saturatedHosts: Set<String>, backgroundLimit: Int?, running: [String: Int] = [:],
        conditions: NetworkConditions = NetworkConditions(), choose: ([QueuedDownload]) -> [QueuedDownload]
    ) throws -> (snapshot: Snapshot, started: [QueuedDownload], gone: Set<String>) {
        func read(_ db: Database) throws -> Snapshot {
            try Self.snapshot(
                db, now: now, apps: apps, excluding: excluding, saturatedHosts: saturatedHosts,
                backgroundLimit: backgroundLimit, running: running, conditions: conditions)
        }
        guard outcomes.isEmpty && startedEarly.isEmpty else {
            return try write { db -> (snapshot: Snapshot, started: [QueuedDownload], gone: Set<String>) in
                let gone = try Self.record(outcomes, startedEarly: startedEarly, db)
                let snapshot = try read(db)
                return (snapshot, try Self.markMoving(choose(snapshot.runnable), db), gone)
            }
        }
        let snapshot = try database.read(read)
        let chosen = choose(snapshot.runnable)
        guard !chosen.isEmpty else { return (snapshot, [], []) }
        return (snapshot, try write { db in try Self.markMoving(chosen, db) }, [])
    }

    private static func snapshot(
        _ db: Database, now: Date, apps: Set<String>, excluding: Set<String>, saturatedHosts: Set<String>,
        backgroundLimit: Int?, running: [String: Int], conditions: NetworkConditions
    ) throws -> Snapshot {
        var read = Snapshot(
            runnable: try Self.runnable(
                db, now: now, apps: apps, excluding: excluding, saturatedHosts: saturatedHosts,
                backgroundLimit: backgroundLimit, running: running, conditions: conditions),
            pendingCompletions: [:], appsWithActiveDownloads: [], nextRetry: try Self.nextRetry(db, after: now))
        let pending = try db.cachedStatement(sql: RunOrderSQL.pending)
        let claimed = try db.cachedStatement(sql: RunOrderSQL.claimed)
        let active = try db.cachedStatement(sql: RunOrderSQL.active)
        for app in apps {
            read.pendingCompletions[app] = try Int.fetchOne(pending, arguments: [app]) ?? 0
            if try Bool.fetchOne(claimed, arguments: [app]) != nil { read.appsWithClaimedCompletions.insert(app) }
            if try Bool.fetchOne(active, arguments: [app]) != nil { read.appsWithActiveDownloads.insert(app) }
        }
        return read
    }

    /// Downloads that may start now, in the order the engine should start them: foreground first, then background
    /// ones shared between apps (`shared`). Within an app: essential before non-essential, then priority, then age;
    /// an app's non-essential background downloads wait until none of its essential ones is active.
    ///
    /// Foreground downloads are all returned (the limits do not hold them back). Background ones are at most
    /// `backgroundLimit`, none to a host in `saturatedHosts`: the engine asks only for what it can start, so that
    /// a long queue costs it no more than a short one. For the same reason an app's background candidates are
    /// looked for among its first `scanLimit` in run order: a queue whose front is all for saturated hosts waits for
    /// those hosts rather than read the whole queue at every turn.
    /// - Parameters:
    ///   - apps: only these apps' downloads; nil for every app's.
    ///   - excluding: unique identifiers whose transfer is already starting.
    ///   - running: per app, the transfers holding a slot now.
    ///   - conditions: what the machine says of its network: a download they hold back (`NetworkConditions.hold`)
    ///     is passed over, as a saturated host's is.
    public func runnable(
        now: Date, apps: Set<String>? = nil, excluding: Set<String> = [], saturatedHosts: Set<String> = [],
        backgroundLimit: Int? = nil, running: [String: Int] = [:], conditions: NetworkConditions = NetworkConditions()
    ) throws -> [QueuedDownload] {
        try database.read { db in
            try Self.runnable(
                db, now: now, apps: apps, excluding: excluding, saturatedHosts: saturatedHosts,
                backgroundLimit: backgroundLimit, running: running, conditions: conditions)
        }
    }

    /// How far into an app's run order a turn looks for background downloads it may start. Past the few running
    /// and reserved at the front, a long walk only passes over downloads for hosts whose slots are full (or that the
    /// network's conditions hold): each row passed over is a seek into the table for its host, so the walk is kept
    /// short and the hosts behind a long front wait for it to move (docs/performance/DECISIONS.md #51).
    static let scanLimit = 512

    /// The run order's questions, written once: the engine asks them at every turn, and a text made anew is also
    /// hashed anew to find its cached statement.
    private enum RunOrderSQL {
        static let order = "ORDER BY isEssential DESC, priority DESC, sequence"
        // An app's queued rows come from the front of its part of `download_runnable`, read in its order:
        // `foreground` is compared with `=` so that the index answers the ORDER BY (`NOT foreground` made SQLite
        // sort the whole queue at every turn). Rows waiting to retry, and foreground ones, are few.
        static let queued = "state = 'queued'"
        static let waiting = "state IN ('waitingToRetry', 'waitingForNetwork')"
        static let due = "\(waiting) AND retryAt <= ?"
        static let foregroundQueued = select("\(queued) AND foreground = 1 \(order)")
        static let foregroundDue = select("\(due) AND foreground = 1 \(order)")
        static let queuedFront = select("\(queued) AND foreground = 0 AND appIdentifier = ? \(order)")
        static let dueFront = select("\(due) AND foreground = 0 AND appIdentifier = ? \(order)")
        static let held = """
            SELECT 1 FROM download WHERE state IN \(TransferState.activeList) AND foreground IN (0, 1)
            AND appIdentifier = ? AND isEssential = 1 LIMIT 1
            """
        /// The next app after `?` with any row, from the front of an index led by the app's identifier: the apps
        /// are found in a seek each, not a walk of the queue.
        static let nextApp = "SELECT MIN(appIdentifier) FROM download WHERE appIdentifier > ?"
        static let pending = """
            SELECT COUNT(*) FROM (
                SELECT 1 FROM download WHERE \(QueueStore.pendingCondition) AND claim IS NULL
                LIMIT \(Snapshot.countLimit))
            """
        static let claimed = """
            SELECT 1 FROM download WHERE \(QueueStore.pendingCondition) AND claim IS NOT NULL LIMIT 1
            """
        static let active = "SELECT 1 FROM download WHERE \(QueueStore.activeCondition) LIMIT 1"
        static let nextRetry = "SELECT MIN(retryAt) FROM download WHERE \(waiting) AND retryAt > ?"

        static func select(_ condition: String) -> String {
            "SELECT \(QueuedDownload.selection) FROM download WHERE \(condition)"
        }
    }

    private static func runnable(
        _ db: Database, now: Date, apps: Set<String>?, excluding: Set<String>, saturatedHosts: Set<String>,
        backgroundLimit: Int?, running: [String: Int], conditions: NetworkConditions
    ) throws -> [QueuedDownload] {
        // The few foreground rows are read whole and filtered here, as the background candidates are below: the
        // sets stay out of SQL, so that each question is one cached statement whatever they hold.
        let judged = conditions.holdsAny
        func wanted(_ download: QueuedDownload) -> Bool {
            (apps?.contains(download.appIdentifier) ?? true) && !excluding.contains(download.uniqueIdentifier)
                && !(judged && conditions.hold(download.networkUse) != nil)
        }
        let timestamp = now.timeIntervalSince1970
        let foreground = Self.merged(
            try QueuedDownload.fetchAll(db.cachedStatement(sql: RunOrderSQL.foregroundQueued)).filter(wanted),
            try QueuedDownload.fetchAll(db.cachedStatement(sql: RunOrderSQL.foregroundDue), arguments: [timestamp])
                .filter(wanted),
            limit: nil)
        if backgroundLimit.map({ $0 <= 0 }) == true { return foreground }

        // Each app's background candidates are read from the front of its part of the run order's index and chosen
        // here: the walk stops at the limit, so a turn costs what it starts, not the queue's length (a walk filtered
        // and sorted inside SQLite read every queued row at every turn: docs/performance/DECISIONS.md #5). A candidate
        // is judged on the cursor's one row, and only a chosen one becomes a `QueuedDownload` (a row fetched on its
        // own cost GRDB a table of the columns' names each time).
        func background(_ sql: String, _ arguments: StatementArguments, held: Bool) throws -> [QueuedDownload] {
            let front = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments)
            var chosen: [QueuedDownload] = []
            var scanned = 0
            while chosen.count < backgroundLimit ?? .max, scanned < scanLimit, let candidate = try front.next() {
                scanned += 1
                // An app held by its essential downloads is walked through them only: they come first in its order.
                let isEssential: Bool = candidate[QueuedDownload.Index.isEssential]
                guard isEssential || !held else { break }
                // Then the host: a queue whose front is a saturated host's is walked past it, row after row.
                let host: String = candidate[QueuedDownload.Index.host]
                guard !saturatedHosts.contains(host) else { continue }
                // And the network's conditions: a metered network passes over what may not use it.
                if judged {
                    let access = NetworkAccess(rawValue: candidate[QueuedDownload.Index.networkAccess])
                    let use = NetworkUse(discretionary: !isEssential, access: access, host: host)
                    guard conditions.hold(use) == nil else { continue }
                }
                let uniqueIdentifier: String = candidate[QueuedDownload.Index.uniqueIdentifier]
                guard !excluding.contains(uniqueIdentifier) else { continue }
                chosen.append(try QueuedDownload(row: candidate))
            }
            return chosen
        }
        let held = try db.cachedStatement(sql: RunOrderSQL.held)
        var perApp: [[QueuedDownload]] = []
        for app in try apps.map({ $0.sorted() }) ?? Self.appsWithRows(db) {
            let isHeld = try Bool.fetchOne(held, arguments: [app]) != nil
            let candidates = Self.merged(
                try background(RunOrderSQL.queuedFront, [app], held: isHeld),
                try background(RunOrderSQL.dueFront, [timestamp, app], held: isHeld), limit: backgroundLimit)
            if !candidates.isEmpty { perApp.append(candidates) }
        }
        return foreground + Self.shared(perApp, running: running, limit: backgroundLimit)
    }

    /// Every app with a row, in order.
    private static func appsWithRows(_ db: Database) throws -> [String] {
        let next = try db.cachedStatement(sql: RunOrderSQL.nextApp)
        var apps: [String] = []
        while let app = try String.fetchOne(next, arguments: [apps.last ?? ""]) { apps.append(app) }
        return apps
    }

    /// Apps' background candidates (each list in its app's run order) in the order their slots go: so that an app
    /// with thousands queued does not take every slot until they are done, the next slot goes to the app with the
    /// fewest transfers running, counting those given a slot before it. Essential downloads still go first, since
    /// each holds its app's launch. Ties go to the older download: an app's priority orders its own downloads,
    /// and never puts them before another app's.
    static func shared(_ lists: [[QueuedDownload]], running: [String: Int], limit: Int?) -> [QueuedDownload] {
        guard lists.count > 1 else { return lists.first.map { Array($0.prefix(limit ?? .max)) } ?? [] }
        var taken = running
        var next = [Int](repeating: 0, count: lists.count)
        var order: [QueuedDownload] = []
        func goesFirst(_ x: QueuedDownload, _ y: QueuedDownload) -> Bool {
            if x.isEssential != y.isEssential { return x.isEssential }
            let (xTaken, yTaken) = (taken[x.appIdentifier, default: 0], taken[y.appIdentifier, default: 0])
            if xTaken != yTaken { return xTaken < yTaken }
            return x.sequence < y.sequence
        }
        while order.count < limit ?? .max {
            var best: Int?
            for list in lists.indices where next[list] < lists[list].count {
                if let current = best, !goesFirst(lists[list][next[list]], lists[current][next[current]]) { continue }
                best = list
            }
            guard let best else { break }
            let download = lists[best][next[best]]
            next[best] += 1
            taken[download.appIdentifier, default: 0] += 1
            order.append(download)
        }
        return order
    }

    /// Two lists in run order, merged in run order: essential first, then priority, then age.
    private static func merged(_ a: [QueuedDownload], _ b: [QueuedDownload], limit: Int?) -> [QueuedDownload] {
        guard !b.isEmpty else { return limit.map { Array(a.prefix($0)) } ?? a }
        let all = (a + b).sorted { x, y in
            if x.isEssential != y.isEssential { return x.isEssential }
            if x.priority != y.priority { return x.priority > y.priority }
            return x.sequence < y.sequence
        }
        return limit.map { Array(all.prefix($0)) } ?? all
    }

    /// The earliest moment after `now` that a waiting download becomes runnable, if any is waiting that long.
    public func nextRetry(after now: Date = Date()) throws -> Date? {
        try database.read { try Self.nextRetry($0, after: now) }
    }

    private static func nextRetry(_ db: Database, after now: Date) throws -> Date? {
        let statement = try db.cachedStatement(sql: RunOrderSQL.nextRetry)
        return try Double.fetchOne(statement, arguments: [now.timeIntervalSince1970]).map { Date(timeIntervalSince1970: $0) }
    }
}
