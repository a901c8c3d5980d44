import Foundation
import GRDB
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

    /// Reads a `Snapshot` for `apps`; the parameters are `runnable`'s.
    public func snapshot(
        now: Date, apps: Set<String>, excluding: Set<String> = [], saturatedHosts: Set<String> = [],
        backgroundLimit: Int? = nil
    ) throws -> Snapshot {
        try database.read { db in
            var snapshot = Snapshot(
                runnable: try Self.runnable(
                    db, now: now, apps: apps, excluding: excluding, saturatedHosts: saturatedHosts,
                    backgroundLimit: backgroundLimit),
                pendingCompletions: [:], appsWithActiveDownloads: [], nextRetry: try Self.nextRetry(db, after: now))
            let pending = try db.cachedStatement(sql: """
                SELECT COUNT(*) FROM (
                    SELECT 1 FROM download WHERE \(Self.pendingCondition) AND claim IS NULL LIMIT \(Snapshot.countLimit))
                """)
            let claimed = try db.cachedStatement(
                sql: "SELECT 1 FROM download WHERE \(Self.pendingCondition) AND claim IS NOT NULL LIMIT 1")
            let active = try db.cachedStatement(sql: "SELECT 1 FROM download WHERE \(Self.activeCondition) LIMIT 1")
            for app in apps {
                snapshot.pendingCompletions[app] = try Int.fetchOne(pending, arguments: [app]) ?? 0
                if try Bool.fetchOne(claimed, arguments: [app]) != nil { snapshot.appsWithClaimedCompletions.insert(app) }
                if try Bool.fetchOne(active, arguments: [app]) != nil { snapshot.appsWithActiveDownloads.insert(app) }
            }
            return snapshot
        }
    }

    /// Downloads that may start now, best first: foreground, then essential before non-essential, then priority,
    /// then age; an app's non-essential background downloads wait until none of its essential ones is active.
    ///
    /// Foreground downloads are all returned (the limits do not hold them back). Background ones are at most
    /// `backgroundLimit`, none to a host in `saturatedHosts`: the engine asks only for what it can start, so that
    /// a long queue costs it no more than a short one. For the same reason the background candidates are looked
    /// for among the first `scanLimit` in run order: a queue whose front is all for saturated hosts waits for those
    /// hosts rather than read the whole queue at every turn.
    /// - Parameters:
    ///   - apps: only these apps' downloads; nil for every app's.
    ///   - excluding: unique identifiers whose transfer is already starting.
    public func runnable(
        now: Date, apps: Set<String>? = nil, excluding: Set<String> = [], saturatedHosts: Set<String> = [],
        backgroundLimit: Int? = nil
    ) throws -> [QueuedDownload] {
        try database.read { db in
            try Self.runnable(
                db, now: now, apps: apps, excluding: excluding, saturatedHosts: saturatedHosts,
                backgroundLimit: backgroundLimit)
        }
    }

    /// How far into the run order a turn looks for background downloads it may start.
    static let scanLimit = 4096

    private static func runnable(
        _ db: Database, now: Date, apps: Set<String>?, excluding: Set<String>, saturatedHosts: Set<String>,
        backgroundLimit: Int?
    ) throws -> [QueuedDownload] {
        // Sets go in as JSON arrays read with json_each, so that each question is one cached statement whatever
        // the sets hold (a statement text per set would grow the cache without bound).
        func json(_ values: Set<String>?) -> String? {
            values.map { String(decoding: try! JSONEncoder().encode(Array($0)), as: UTF8.self) }
        }
        let appsJSON = json(apps)
        let excludingJSON = json(excluding) ?? "[]"
        let order = "ORDER BY isEssential DESC, priority DESC, sequence"
        let wanted = """
            (?1 IS NULL OR appIdentifier IN (SELECT value FROM json_each(?1)))
            AND uniqueIdentifier NOT IN (SELECT value FROM json_each(?2))
            """
        // Queued rows come from the front of `download_runnable`, read in its order: `foreground` is compared with
        // `=` so that the index answers the ORDER BY (`NOT foreground` made SQLite sort the whole queue at every
        // turn). Rows waiting to retry are few.
        let queued = "state = 'queued'"
        let waiting = "state IN ('waitingToRetry', 'waitingForNetwork')"
        let due = "\(waiting) AND retryAt <= ?3"
        let foreground = Self.merged(
            try fetch(db, where: "\(queued) AND foreground = 1 AND \(wanted) \(order)", [appsJSON, excludingJSON]),
            try fetch(
                db, where: "\(due) AND foreground = 1 AND \(wanted) \(order)",
                [appsJSON, excludingJSON, now.timeIntervalSince1970]),
            limit: nil)
        if backgroundLimit.map({ $0 <= 0 }) == true { return foreground }

        // Background candidates are read from the front of the run order's index, a few columns a row, and chosen
        // here: the walk stops at the limit, so a turn costs what it starts, not the queue's length (a walk
        // filtered and sorted inside SQLite read every queued row at every turn, 0.27 s of 2,000 small files).
        let heldApps = try Set(String.fetchAll(db.cachedStatement(sql: """
            SELECT DISTINCT appIdentifier FROM download
            WHERE state IN \(TransferState.activeList)
                AND foreground IN (0, 1) AND isEssential = 1
            """)))
        let row = try db.cachedStatement(sql: "SELECT \(QueuedDownload.selection) FROM download WHERE rowid = ?")
        func background(_ condition: String, _ arguments: StatementArguments) throws -> [QueuedDownload] {
            let front = try Row.fetchCursor(
                db.cachedStatement(sql: """
                    SELECT rowid, appIdentifier, uniqueIdentifier, host, isEssential FROM download
                    WHERE \(condition) AND foreground = 0 \(order)
                    """),
                arguments: arguments)
            var chosen: [QueuedDownload] = []
            var scanned = 0
            while chosen.count < backgroundLimit ?? .max, scanned < scanLimit, let candidate = try front.next() {
                scanned += 1
                let app: String = candidate[1]
                guard apps?.contains(app) ?? true, !excluding.contains(candidate[2]),
                    !saturatedHosts.contains(candidate[3]), candidate[4] || !heldApps.contains(app),
                    let download = try QueuedDownload.fetchOne(row, arguments: [candidate[0] as Int64])
                else { continue }
                chosen.append(download)
            }
            return chosen
        }
        return foreground + Self.merged(
            try background(queued, []), try background("\(waiting) AND retryAt <= ?", [now.timeIntervalSince1970]),
            limit: backgroundLimit)
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
        let statement = try db.cachedStatement(sql: """
            SELECT MIN(retryAt) FROM download WHERE state IN ('waitingToRetry', 'waitingForNetwork') AND retryAt > ?
            """)
        return try Double.fetchOne(statement, arguments: [now.timeIntervalSince1970]).map { Date(timeIntervalSince1970: $0) }
    }
}
