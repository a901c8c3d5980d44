import CBAExtension
import Foundation
import GRDB
import HostVocabulary
import Synchronization
import Vocabulary

/// The durable queue: every app and every download, in one SQLite database (WAL mode), written in a transaction
/// at every state change, so that a host killed at any moment restarts with nothing lost.
///
/// Commits do not wait for the disk (`synchronous = NORMAL`): a committed transaction survives the host being
/// killed (it is in the WAL, in the kernel's cache), and the database survives losing power whole, but a power cut
/// may undo the last commits. Nothing here depends on more: a file is synced before its row says it is finished,
/// so an undone commit only makes the host fetch again (or resume) what it had; a validator lost with its commit
/// makes the partial file start over. A commit that waited for the disk cost a sync per state change, which made
/// many small files slow (Benchmarks).
///
/// Hot paths (admission, saves, the engine's questions) run prepared statements that each connection caches,
/// over rows of plain columns. The store is the queue's only writer (one engine per data root holds its lock), so
/// it keeps the app records and the last sequence number in memory, updated after each write that changes them.
///
/// Thread rule: any thread; GRDB serializes writes.
public final class QueueStore: Sendable {
    let database: DatabasePool
    /// Every installed app's record, as last committed.
    let appCache: Mutex<[String: AppRecord]>
    /// The highest sequence number given so far. Advanced inside write transactions (which GRDB serializes); one
    /// that rolls back leaves a gap, which only order depends on.
    private let lastSequenceNumber: Mutex<Int64>
    /// The last stage a content request's admission was given (`StagedAdmission`); stages live as long as the process.
    let stages = Atomic<Int64>(0)
    /// Stages begun and not yet committed or discarded: the last to end drops their table, which is quicker than
    /// deleting its rows one by one inside the commit's transaction.
    let openStages = Atomic<Int>(0)

    /// Opens (creating) the queue at `path`.
    public init(path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        // Two readers and a small page cache per connection: the file's pages stay in the kernel's cache anyway, and
        // GRDB's defaults (five readers, more cache each) held copies of them (docs/performance/DECISIONS.md #30).
        configuration.maximumReaderCount = 2
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA cache_size = -1024")
            // Staged admissions (`StagedAdmission`) are temporary tables: in a file of their own, not in memory.
            try db.execute(sql: "PRAGMA temp_store = FILE")
        }
        database = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(database)
        let (apps, sequence) = try database.read { db in
            (try AppRecord.fetchAll(db), try Int64.fetchOne(db, sql: "SELECT MAX(sequence) FROM download") ?? 0)
        }
        appCache = Mutex(Dictionary(uniqueKeysWithValues: apps.map { ($0.appIdentifier, $0) }))
        lastSequenceNumber = Mutex(sequence)
    }

    /// A write transaction, as GRDB's `write` runs one, with its BEGIN and COMMIT prepared once per connection:
    /// GRDB parses their SQL at every transaction, on the path of every `scheduleDownload` (docs/performance/
    /// DECISIONS.md #36). An error rolls the transaction back and is rethrown.
    func write<T>(_ updates: (Database) throws -> T) throws -> T {
        try database.writeWithoutTransaction { db in
            try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
            do {
                let result = try updates(db)
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
                return result
            } catch {
                // SQLite may have rolled it back already (a full disk, an I/O error).
                if db.isInsideTransaction { try? db.rollback() }
                throw error
            }
        }
    }

    // MARK: Apps

    /// Records what a commit of `app` wrote (the store is the only writer: see the type's comment).
    func cacheApp(_ app: AppRecord) {
        appCache.withLock { $0[app.appIdentifier] = app }
    }

    public func app(_ appIdentifier: String) throws -> AppRecord? {
        appCache.withLock { $0[appIdentifier] }
    }

    /// Every installed app, by identifier.
    public func apps() throws -> [AppRecord] {
        appCache.withLock { $0.values.sorted { $0.appIdentifier < $1.appIdentifier } }
    }

    /// Installs or updates an app's record. An update keeps what it has used of its allowances and whether it has
    /// launched.
    public func install(_ app: AppRecord) throws {
        let record = try write { db in
            var record = app
            if let existing = try AppRecord.fetchOne(db, key: app.appIdentifier) {
                record.usedBytes = existing.usedBytes
                record.usedEssentialBytes = existing.usedEssentialBytes
                record.launched = existing.launched
                record.manifestURLOverride = existing.manifestURLOverride
            }
            try record.save(db)
            return record
        }
        appCache.withLock { $0[record.appIdentifier] = record }
    }

    /// Runs `body` on an app's record inside one transaction and saves what it changed.
    public func updateApp<T>(_ appIdentifier: String, _ body: (inout AppRecord) throws -> T) throws -> T {
        let (record, result) = try write { db in
            guard var record = try AppRecord.fetchOne(db, key: appIdentifier) else {
                throw QueueError.unknownApp(appIdentifier)
            }
            let result = try body(&record)
            try record.update(db)
            return (record, result)
        }
        appCache.withLock { $0[appIdentifier] = record }
        return result
    }

    /// Removes an app and everything the queue holds for it; returns its downloads (the running ones' transfers are
    /// to be stopped, and partial files deleted).
    public func uninstall(_ appIdentifier: String) throws -> [QueuedDownload] {
        let downloads = try write { db in
            guard try AppRecord.exists(db, key: appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
            let downloads = try QueuedDownload.filter(Column("appIdentifier") == appIdentifier).fetchAll(db)
            try QueuedDownload.filter(Column("appIdentifier") == appIdentifier).deleteAll(db)
            _ = try AppRecord.deleteOne(db, key: appIdentifier)
            return downloads
        }
        appCache.withLock { _ = $0.removeValue(forKey: appIdentifier) }
        return downloads
    }

    // MARK: The service's schedule

    public func schedule(_ appIdentifier: String) throws -> AppSchedule? {
        try database.read { try AppSchedule.fetchOne($0, key: appIdentifier) }
    }

    public func saveSchedule(_ schedule: AppSchedule) throws {
        try write { try schedule.save($0) }
    }

    /// Runs `body` on an app's schedule inside one transaction and saves what it changed.
    public func updateSchedule<T>(_ appIdentifier: String, _ body: (inout AppSchedule) throws -> T) throws -> T {
        try write { db in
            guard var record = try AppSchedule.fetchOne(db, key: appIdentifier) else {
                throw QueueError.unknownApp(appIdentifier)
            }
            let result = try body(&record)
            try record.update(db)
            return result
        }
    }

    /// The highest sequence number given so far: downloads queued later have higher ones.
    public func lastSequence() throws -> Int64 {
        lastSequenceNumber.withLock { $0 }
    }

    func nextSequence() -> Int64 {
        lastSequenceNumber.withLock { last in
            last += 1
            return last
        }
    }

    // MARK: Downloads

    public func download(_ uniqueIdentifier: String) throws -> QueuedDownload? {
        try database.read { try Self.fetch($0, where: "uniqueIdentifier = ?", [uniqueIdentifier]).first }
    }

    /// Rows of `download` matching a condition, through a cached statement.
    static func fetch(_ db: Database, where condition: String, _ arguments: StatementArguments = [])
        throws -> [QueuedDownload]
    {
        let statement = try db.cachedStatement(sql: "SELECT \(QueuedDownload.selection) FROM download WHERE \(condition)")
        return try QueuedDownload.fetchAll(statement, arguments: arguments)
    }

    /// Saves what the engine changes in a queued download. Not the download itself, which never changes once queued,
    /// nor `foreground`, which only promotion and demotion change, while the row may be moving.
    public func save(_ download: QueuedDownload) throws {
        try write { try Self.saveState(download, db: $0) }
    }

    /// Saves several downloads in one transaction. For tests, which set up many rows at once.
    @_spi(Testing) public func save(_ downloads: [QueuedDownload]) throws {
        guard !downloads.isEmpty else { return }
        try write { db in
            for download in downloads { try Self.saveState(download, db: db) }
        }
    }

    /// Sets `deliveredAt` (two arguments: whether delivered, and now) to the moment a row was first saved as
    /// delivered: what pruneDelivered counts from.
    static let deliveredAtAssignment = "deliveredAt = CASE WHEN ? THEN COALESCE(deliveredAt, ?) END"

    private static func saveState(_ download: QueuedDownload, db: Database) throws {
        let statement = try db.cachedStatement(sql: """
            UPDATE download SET state = ?, bytesReceived = ?, etag = ?, lastModified = ?, attempts = ?, retryAt = ?,
                errorCode = ?, errorDomain = ?, errorMessage = ?, filePath = ?, deliveryAttempts = ?, delivered = ?,
                claim = ?, offlineSince = ?, \(deliveredAtAssignment)
            WHERE uniqueIdentifier = ?
            """)
        try statement.execute(arguments: [
            download.state.rawValue, download.bytesReceived, download.etag, download.lastModified, download.attempts,
            download.retryAt?.timeIntervalSince1970, download.error?.code, download.error?.domain,
            download.error?.message, download.filePath, download.deliveryAttempts, download.delivered,
            download.claim, download.offlineSince?.timeIntervalSince1970, download.delivered,
            Date().timeIntervalSince1970, download.uniqueIdentifier,
        ])
        guard db.changesCount == 1 else { throw QueueError.unknownDownload(download.uniqueIdentifier) }
    }

    /// Marks downloads as moving, in one transaction, and returns them so; one that is no longer waiting (cancelled,
    /// or already moving) is left out. For tests: the engine marks rows moving in its turn.
    @_spi(Testing) public func startTransfers(_ downloads: [QueuedDownload]) throws -> [QueuedDownload] {
        try record([], start: downloads).started
    }

    /// Records transfers' outcomes (each row's state, as `save`) and marks `downloads` as moving, in one
    /// transaction (what `turn` writes around its read). Returns the downloads marked moving (as `startTransfers`),
    /// and the unique identifiers of the outcomes whose row is gone (cancelled while it ran). `startedEarly` are
    /// `turn`'s.
    public func record(
        _ outcomes: [QueuedDownload], startedEarly: [QueuedDownload] = [], start downloads: [QueuedDownload]
    ) throws -> (started: [QueuedDownload], gone: Set<String>) {
        guard !outcomes.isEmpty || !startedEarly.isEmpty || !downloads.isEmpty else { return ([], []) }
        return try write { db in
            let gone = try Self.record(outcomes, startedEarly: startedEarly, db)
            return (try Self.markMoving(downloads, db), gone)
        }
    }

    /// Marks `startedEarly` moving, then saves `outcomes` (`record`). A download started early whose outcome is
    /// among them is not marked: its outcome's row sets every column the mark would (the state, the attempt counted
    /// when it started, the retry time), so with many small files, many of which end before the turn after their
    /// start, each such row is written once instead of twice.
    static func record(
        _ outcomes: [QueuedDownload], startedEarly: [QueuedDownload], _ db: Database
    ) throws -> Set<String> {
        if !startedEarly.isEmpty {
            let ended = Set(outcomes.lazy.map(\.uniqueIdentifier))
            _ = try markMoving(startedEarly.filter { !ended.contains($0.uniqueIdentifier) }, db)
        }
        return try record(outcomes, db)
    }

    /// Saves outcomes (each row's state, as `save`); returns the unique identifiers of those whose row is gone.
    /// Callers record outcomes before they mark anything moving: a row queued again while its outcome waited
    /// (`recoverInterruptedTransfers`) is then not started again.
    static func record(_ outcomes: [QueuedDownload], _ db: Database) throws -> Set<String> {
        var gone = Set<String>()
        for outcome in outcomes {
            do {
                try saveState(outcome, db: db)
            } catch QueueError.unknownDownload(let uniqueIdentifier) {
                gone.insert(uniqueIdentifier)
            }
        }
        return gone
    }

    /// Marks downloads moving and returns them so; one that is no longer waiting (cancelled, or already moving) is
    /// left out.
    static func markMoving(_ downloads: [QueuedDownload], _ db: Database) throws -> [QueuedDownload] {
        let statement = try db.cachedStatement(sql: """
            UPDATE download SET state = 'downloading', attempts = attempts + 1, retryAt = NULL
            WHERE uniqueIdentifier = ? AND state IN ('queued', 'waitingToRetry', 'waitingForNetwork')
            """)
        var started: [QueuedDownload] = []
        for var download in downloads {
            try statement.execute(arguments: [download.uniqueIdentifier])
            guard db.changesCount == 1 else { continue }
            download.state = .downloading
            download.attempts += 1
            download.retryAt = nil
            started.append(download)
        }
        return started
    }

    /// An app's scheduled and in-flight downloads (Apple's fetchCurrentDownloads), in queue order.
    public func activeDownloads(for appIdentifier: String) throws -> [QueuedDownload] {
        try database.read { db in
            try Self.fetch(db, where: "\(Self.activeCondition) ORDER BY sequence", [appIdentifier])
        }
    }

    /// What the app's `fetchCurrentDownloads` returns: its scheduled and in-flight downloads in queue order, as the
    /// ABI describes them, without its asset packs (a managed app's pack downloads are the host's own).
    public func currentDownloads(for appIdentifier: String) throws -> [Download] {
        var downloads: [Download] = []
        var order: [(sequence: Int64, index: Int)] = []
        try forEachCurrentDownload(for: appIdentifier) { sequence, download in
            order.append((sequence, downloads.count))
            downloads.append(download.download)
        }
        return order.sorted { $0.sequence < $1.sequence }.map { downloads[$0.index] }
    }

    /// Calls `body` with each of `currentDownloads` read in place from its row, and its place in the queue
    /// (`sequence`), without making a `Download` of it: the service writes its reply from these.
    ///
    /// In the order SQLite finds the rows, not in queue order: put in queue order by SQLite, the rows would be sorted
    /// whole in a temporary B-tree, nearly half of SQLite's time for a long queue; an index in queue order would cost
    /// every insert a page more. The rows come in runs already in order (one per state), which the caller's sort
    /// takes in about linear time.
    public func forEachCurrentDownload(
        for appIdentifier: String, _ body: (_ sequence: Int64, DownloadInPlace) throws -> Void
    ) throws {
        try database.read { db in
            let statement = try db.cachedStatement(sql: """
                SELECT kind, identifier, uniqueIdentifier, url, applicationGroupIdentifier, fileSize, priority,
                    isEssential, sha256, httpHeaders, \(TransferState.publicStateSQL), sequence, networkAccess
                FROM download WHERE \(Self.activeCondition) AND kind != ?
                """)
            let rows = try Row.fetchCursor(statement, arguments: [appIdentifier, Download.Kind.assetPack.rawValue])
            let row = RowInPlace(statement.sqliteStatement)
            while try rows.next() != nil {
                let headers = row.text(9).map { QueuedDownload.headers(String(decoding: $0, as: UTF8.self)) } ?? []
                try body(row.int(11), DownloadInPlace(
                    kind: Download.Kind(rawValue: Int32(truncatingIfNeeded: row.int(0))) ?? .url,
                    identifier: row.textOrEmpty(1), uniqueIdentifier: row.text(2), url: row.text(3),
                    applicationGroupIdentifier: row.textOrEmpty(4), fileSize: row.int(5), priority: row.int(6),
                    state: Int32(truncatingIfNeeded: row.int(10)), isEssential: row.int(7) != 0, sha256: row.text(8),
                    httpHeaders: headers, networkAccess: NetworkAccess(rawValue: UInt32(truncatingIfNeeded: row.int(12)))))
            }
        }
    }

    /// How many scheduled and in-flight downloads an app has.
    public func activeDownloadCount(for appIdentifier: String) throws -> Int {
        try database.read { db in
            try Int.fetchOne(
                db.cachedStatement(sql: "SELECT COUNT(*) FROM download WHERE \(Self.activeCondition)"),
                arguments: [appIdentifier]) ?? 0
        }
    }

    /// An app's essential downloads queued after `sequence` that failed, in queue order.
    public func failedEssentialDownloads(for appIdentifier: String, after sequence: Int64) throws -> [QueuedDownload] {
        try database.read { db in
            try Self.fetch(
                db, where: "appIdentifier = ? AND isEssential AND sequence > ? AND state = 'failed' ORDER BY sequence",
                [appIdentifier, sequence])
        }
    }

    /// The app's essential downloads queued after `sequence` (its last install or update), whatever their state:
    /// the bytes received of those expected (a finished one counts whole), and how many are still active. The
    /// received bytes are those last saved (at most a second or 4 MiB behind).
    public func essentialProgress(for appIdentifier: String, after sequence: Int64) throws
        -> (received: Int64, expected: Int64, active: Int)
    {
        try database.read { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT COALESCE(SUM(CASE WHEN state = 'finished' OR delivered THEN fileSize
                                         ELSE MIN(bytesReceived, fileSize) END), 0),
                       COALESCE(SUM(fileSize), 0),
                       COUNT(CASE WHEN state IN \(TransferState.activeList) THEN 1 END)
                FROM download WHERE appIdentifier = ? AND isEssential AND sequence > ? AND state != 'failed'
                """, arguments: [appIdentifier, sequence])
            return (row?[0] ?? 0, row?[1] ?? 0, row?[2] ?? 0)
        }
    }

    /// The app's active foreground downloads (`startForegroundDownload`, `ensureLocalAvailability`): bytes received
    /// of those expected, and how many.
    public func foregroundProgress(for appIdentifier: String) throws -> (received: Int64, expected: Int64, active: Int) {
        try database.read { db in
            let row = try Row.fetchOne(db, sql: """
                SELECT COALESCE(SUM(MIN(bytesReceived, fileSize)), 0), COALESCE(SUM(fileSize), 0), COUNT(*)
                FROM download WHERE appIdentifier = ? AND foreground = 1 AND state IN \(TransferState.activeList)
                """, arguments: [appIdentifier])
            return (row?[0] ?? 0, row?[1] ?? 0, row?[2] ?? 0)
        }
    }

    /// Every download of an app, in queue order.
    public func downloads(for appIdentifier: String) throws -> [QueuedDownload] {
        try database.read { try Self.fetch($0, where: "appIdentifier = ? ORDER BY sequence", [appIdentifier]) }
    }

    /// Cancels an active download (by unique identifier when given, else by identifier); false when none matched.
    public func cancel(appIdentifier: String, uniqueIdentifier: String?, identifier: String) throws -> QueuedDownload? {
        try write { db in
            guard let found = try Self.active(db, appIdentifier, uniqueIdentifier, identifier) else { return nil }
            try db.execute(sql: "DELETE FROM download WHERE uniqueIdentifier = ?", arguments: [found.uniqueIdentifier])
            return found
        }
    }

    /// Whether an app has active downloads (essential ones only, when `essential`).
    public func hasActiveDownloads(for appIdentifier: String, essential: Bool = false) throws -> Bool {
        try database.read { db in
            let statement = try db.cachedStatement(
                sql: "SELECT 1 FROM download WHERE \(Self.activeCondition)\(essential ? " AND isEssential" : "") LIMIT 1")
            return try Bool.fetchOne(statement, arguments: [appIdentifier]) != nil
        }
    }

    /// Whether an app has anything left to do: active downloads or undelivered completions. For tests: the engine
    /// reads the same from its turn's snapshot (`Snapshot.hasWork`).
    @_spi(Testing) public func hasWork(for appIdentifier: String) throws -> Bool {
        try hasActiveDownloads(for: appIdentifier) || pendingCompletionCount(for: appIdentifier) > 0
    }

    /// Promotes an app's active download to the foreground (by unique identifier when given, else by identifier):
    /// it starts now, before every background download; one waiting to retry does not wait any longer.
    public func promote(appIdentifier: String, uniqueIdentifier: String?, identifier: String) throws -> QueuedDownload? {
        try write { db in
            guard var found = try Self.active(db, appIdentifier, uniqueIdentifier, identifier) else { return nil }
            found.foreground = true
            if found.state != .downloading { found.retryAt = nil }
            if found.state == .waitingToRetry || found.state == .waitingForNetwork { found.state = .queued }
            try db.execute(
                sql: "UPDATE download SET foreground = 1, retryAt = ?, state = ? WHERE uniqueIdentifier = ?",
                arguments: [found.retryAt?.timeIntervalSince1970, found.state.rawValue, found.uniqueIdentifier])
            return found
        }
    }

    /// An app's active download, by unique identifier when given, else by identifier.
    private static func active(_ db: Database, _ appIdentifier: String, _ uniqueIdentifier: String?, _ identifier: String)
        throws -> QueuedDownload?
    {
        let states = "state IN \(TransferState.activeList)"
        if let uniqueIdentifier {
            return try fetch(
                db, where: "appIdentifier = ? AND uniqueIdentifier = ? AND \(states)", [appIdentifier, uniqueIdentifier]
            ).first
        }
        return try fetch(db, where: "appIdentifier = ? AND identifier = ? AND \(states) LIMIT 1", [appIdentifier, identifier])
            .first
    }

    /// An app's foreground downloads go back to the background (Apple: they stay in the foreground until the
    /// app's download manager disconnects).
    public func demoteForeground(appIdentifier: String) throws {
        try write { db in
            try db.execute(
                sql: "UPDATE download SET foreground = 0 WHERE appIdentifier = ? AND foreground", arguments: [appIdentifier])
        }
    }

    /// The app that owns a download, whatever its state.
    public func owner(ofUniqueIdentifier uniqueIdentifier: String) throws -> String? {
        try database.read { db in
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT appIdentifier FROM download WHERE uniqueIdentifier = ?"),
                arguments: [uniqueIdentifier])
        }
    }

    /// Makes the downloads waiting for the network due now (the network changed, or their host was reached again):
    /// every one, or those of `hosts`. Returns how many.
    @discardableResult
    public func wakeWaitingForNetwork(hosts: Set<String>? = nil, now: Date = Date()) throws -> Int {
        try write { db in
            let sql = "UPDATE download SET retryAt = ? WHERE state = 'waitingForNetwork' AND retryAt > ?"
            let timestamp = now.timeIntervalSince1970
            guard let hosts else {
                try db.execute(sql: sql, arguments: [timestamp, timestamp])
                return db.changesCount
            }
            var count = 0
            for host in hosts.sorted() {
                try db.execute(sql: sql + " AND host = ?", arguments: [timestamp, timestamp, host])
                count += db.changesCount
            }
            return count
        }
    }

    /// After a crash, downloads that were moving are queued again (their partial files stay, to be resumed).
    public func recoverInterruptedTransfers() throws {
        try write { db in
            try db.execute(sql: "UPDATE download SET state = 'queued' WHERE state = 'downloading'")
        }
    }
}

public enum QueueError: Error, CustomStringConvertible {
    case unknownApp(String)
    /// The download is not in the queue (cancelled, by unique identifier).
    case unknownDownload(String)

    public var description: String {
        switch self {
        case .unknownApp(let app): "no app \(app) is installed in the queue"
        case .unknownDownload(let uniqueIdentifier): "no download \(uniqueIdentifier) is in the queue"
        }
    }
}
