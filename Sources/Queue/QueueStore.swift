import CBAExtension
import Foundation
import GRDB
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
    private let appCache: Mutex<[String: AppRecord]>
    /// The highest sequence number given so far. Advanced inside write transactions (which GRDB serializes); one
    /// that rolls back leaves a gap, which only order depends on.
    private let lastSequenceNumber: Mutex<Int64>
    /// The last stage a content request's admission was given (`StagedAdmission`); stages live as long as the process.
    let stages = Atomic<Int64>(0)

    /// Opens (creating) the queue at `path`.
    public init(path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        // Two readers and a small page cache per connection: the file's pages stay in the kernel's cache anyway, and
        // with GRDB's defaults (five readers, more cache each) a daemon that answered a few fetches of a long queue
        // held copies of them (docs/PERFORMANCE.md).
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

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: AppRecord.databaseTableName) { t in
                t.primaryKey("appIdentifier", .text)
                t.column("appGroupIdentifier", .text).notNull()
                t.column("pluginPath", .text).notNull()
                t.column("manifestURL", .text).notNull()
                t.column("domainAllowList", .jsonText).notNull()
                t.column("downloadAllowance", .integer).notNull()
                t.column("essentialDownloadAllowance", .integer).notNull()
                t.column("usedBytes", .integer).notNull()
                t.column("usedEssentialBytes", .integer).notNull()
                t.column("launched", .boolean).notNull()
                t.column("allowInsecureLoopback", .boolean).notNull()
            }
            try db.create(table: QueuedDownload.databaseTableName) { t in
                t.primaryKey("uniqueIdentifier", .text)
                t.column("appIdentifier", .text).notNull().references(AppRecord.databaseTableName)
                t.column("sequence", .integer).notNull()
                t.column("identifier", .text).notNull()
                t.column("priority", .integer).notNull()
                t.column("isEssential", .boolean).notNull()
                t.column("download", .jsonText).notNull()
                t.column("state", .text).notNull()
                t.column("bytesReceived", .integer).notNull()
                t.column("etag", .text)
                t.column("lastModified", .text)
                t.column("attempts", .integer).notNull()
                t.column("retryAt", .datetime)
                t.column("error", .jsonText)
                t.column("filePath", .text)
                t.column("deliveryAttempts", .integer).notNull()
                t.column("delivered", .boolean).notNull()
            }
            try db.create(index: "download_by_app_identifier", on: "download", columns: ["appIdentifier", "identifier"])
            try db.create(index: "download_by_state", on: "download", columns: ["state"])
            try db.create(index: "download_by_sequence", on: "download", columns: ["sequence"])
        }
        migrator.registerMigration("v2: foreground downloads, the service's per-app schedule") { db in
            try db.alter(table: QueuedDownload.databaseTableName) { t in
                t.add(column: "foreground", .boolean).notNull().defaults(to: false)
            }
            try db.create(table: AppSchedule.databaseTableName) { t in
                t.primaryKey("appIdentifier", .text).references(AppRecord.databaseTableName, onDelete: .cascade)
                t.column("appDirectory", .text).notNull()
                t.column("backgroundRefresh", .boolean).notNull()
                t.column("launches", .jsonText).notNull()
                t.column("nextPeriodic", .datetime)
                t.column("lastPeriodic", .datetime)
                t.column("lastDecision", .text)
                t.column("budgetDay", .text).notNull()
                t.column("budgetUsedSeconds", .double).notNull()
                t.column("unlimitedRuntime", .boolean).notNull()
                t.column("contentRequestSequence", .integer).notNull()
            }
        }
        migrator.registerMigration("v3: the host column, indexes for the engine's per-app questions") { db in
            try db.alter(table: QueuedDownload.databaseTableName) { t in
                t.add(column: "host", .text).notNull().defaults(to: "")
            }
            let rows = try Row.fetchAll(db, sql: "SELECT uniqueIdentifier, download FROM download")
            for row in rows {
                let json = Data((row["download"] as String).utf8)
                let download = try JSONDecoder().decode(Download.self, from: json)
                try db.execute(
                    sql: "UPDATE download SET host = ? WHERE uniqueIdentifier = ?",
                    arguments: [QueuedDownload.host(of: download), row["uniqueIdentifier"] as String])
            }
            // Active rows are never delivered, so one index serves both "active" and "undelivered" per app.
            try db.create(
                index: "download_by_app_delivered_state", on: "download",
                columns: ["appIdentifier", "delivered", "state"])
            // The engine's next downloads in the order they run, read from the front: never a sort of the queue.
            try db.execute(sql: """
                CREATE INDEX download_runnable ON download(state, foreground, isEssential DESC, priority DESC, sequence)
                """)
            try db.create(index: "download_essential_state", on: "download", columns: ["isEssential", "state"])
        }
        migrator.registerMigration("v4: a column per field, no JSON") { db in
            try db.create(table: "download_v4") { t in
                t.primaryKey("uniqueIdentifier", .text)
                t.column("appIdentifier", .text).notNull().references(AppRecord.databaseTableName)
                t.column("sequence", .integer).notNull()
                t.column("kind", .integer).notNull()
                t.column("identifier", .text).notNull()
                t.column("url", .text)
                t.column("applicationGroupIdentifier", .text).notNull()
                t.column("fileSize", .integer).notNull()
                t.column("priority", .integer).notNull()
                t.column("isEssential", .boolean).notNull()
                t.column("sha256", .text)
                t.column("httpHeaders", .text)
                t.column("host", .text).notNull()
                t.column("foreground", .boolean).notNull()
                t.column("state", .text).notNull()
                t.column("bytesReceived", .integer).notNull()
                t.column("etag", .text)
                t.column("lastModified", .text)
                t.column("attempts", .integer).notNull()
                t.column("retryAt", .double)
                t.column("errorCode", .integer)
                t.column("errorDomain", .text)
                t.column("errorMessage", .text)
                t.column("filePath", .text)
                t.column("deliveryAttempts", .integer).notNull()
                t.column("delivered", .boolean).notNull()
            }
            let rows = try Row.fetchCursor(db, sql: "SELECT * FROM download")
            // v4's columns: those that later migrations add come after them.
            let v4Columns = 26
            let insert = try db.makeStatement(sql: QueuedDownload.insertSQL(into: "download_v4", count: v4Columns))
            while let row = try rows.next() {
                let decoder = JSONDecoder()
                let download = try decoder.decode(Download.self, from: Data((row["download"] as String).utf8))
                var queued = QueuedDownload(
                    appIdentifier: row["appIdentifier"], sequence: row["sequence"], download: download,
                    foreground: row["foreground"])
                queued.state = TransferState(rawValue: row["state"]) ?? .queued
                queued.bytesReceived = row["bytesReceived"]
                queued.etag = row["etag"]
                queued.lastModified = row["lastModified"]
                queued.attempts = row["attempts"]
                queued.retryAt = row["retryAt"]
                queued.error = try (row["error"] as String?).map { try decoder.decode(HostError.self, from: Data($0.utf8)) }
                queued.filePath = row["filePath"]
                queued.deliveryAttempts = row["deliveryAttempts"]
                queued.delivered = row["delivered"]
                try insert.execute(arguments: StatementArguments(Array(queued.databaseValues.prefix(v4Columns))))
            }
            try db.drop(table: "download")
            try db.rename(table: "download_v4", to: "download")
            // Every index costs each insert its pages, so only the engine's and the apps' questions have one: an app's
            // identifier (admission), an app's pending or active rows, and the run order (which, read with
            // `foreground IN (0, 1)`, also answers which apps have essential downloads active).
            try db.create(index: "download_by_app_identifier", on: "download", columns: ["appIdentifier", "identifier"])
            try db.create(
                index: "download_by_app_delivered_state", on: "download", columns: ["appIdentifier", "delivered", "state"])
            try db.execute(sql: """
                CREATE INDEX download_runnable ON download(state, foreground, isEssential DESC, priority DESC, sequence)
                """)
        }
        migrator.registerMigration("v5: managed asset packs") { db in
            try db.alter(table: AppRecord.databaseTableName) { t in
                t.add(column: "hasManagedAssetPacks", .boolean).notNull().defaults(to: false)
            }
        }
        migrator.registerMigration("v6: the development override of the manifest URL") { db in
            try db.alter(table: AppRecord.databaseTableName) { t in t.add(column: "manifestURLOverride", .text) }
        }
        migrator.registerMigration("v7: when a completion was delivered, so that delivered rows can be pruned") { db in
            try db.alter(table: QueuedDownload.databaseTableName) { t in t.add(column: "deliveredAt", .double) }
            // Rows delivered before this column existed count from now.
            try db.execute(
                sql: "UPDATE download SET deliveredAt = ? WHERE delivered = 1", arguments: [Date().timeIntervalSince1970])
            try db.execute(sql: "CREATE INDEX download_by_delivered_at ON download(deliveredAt) WHERE deliveredAt IS NOT NULL")
        }
        migrator.registerMigration("v8: who holds a completion while its callback runs") { db in
            try db.alter(table: QueuedDownload.databaseTableName) { t in t.add(column: "claim", .text) }
        }
        migrator.registerMigration("v9: the processes launched as each app") { db in
            try db.alter(table: AppSchedule.databaseTableName) { t in
                t.add(column: "launchedProcesses", .jsonText).notNull().defaults(to: "[]")
            }
        }
        migrator.registerMigration("v10: the languages a managed app's localized packs follow") { db in
            try db.alter(table: AppSchedule.databaseTableName) { t in
                t.add(column: "assetPackLanguage", .text)
                t.add(column: "preferredLanguages", .jsonText)
            }
        }
        migrator.registerMigration("v11: apps declared by packages", migrate: Self.createDeclaredApps)
        return migrator
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
        let record = try database.write { db in
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
        let (record, result) = try database.write { db in
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
        let downloads = try database.write { db in
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
        try database.write { try schedule.save($0) }
    }

    /// Runs `body` on an app's schedule inside one transaction and saves what it changed.
    public func updateSchedule<T>(_ appIdentifier: String, _ body: (inout AppSchedule) throws -> T) throws -> T {
        try database.write { db in
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

    // MARK: Admission

    /// Queues downloads for an app in one transaction. `admit` decides each one given the app's record (which it may
    /// change, e.g. to count allowance) and returns an error to refuse it. An identifier already active in the
    /// app's queue is refused with Apple's 100 (except an asset pack's: the host queues the files of one update). A
    /// unique identifier the queue already holds gets a fresh one, or, when `refusingForeign` and another app holds
    /// it, is refused with 55 (an app's own calls).
    public func enqueue(
        _ downloads: [Download], for appIdentifier: String, foreground: Bool = false,
        refusingForeign: Bool = false, admit: (inout AppRecord, Download) -> HostError?
    ) throws -> [(download: Download, result: Result<QueuedDownload, HostError>)] {
        guard let before = appCache.withLock({ $0[appIdentifier] }) else { throw QueueError.unknownApp(appIdentifier) }
        var app = before
        let results = try database.write { db in
            var results: [(Download, Result<QueuedDownload, HostError>)] = []
            results.reserveCapacity(downloads.count)
            let active = try db.cachedStatement(sql: """
                SELECT 1 FROM download WHERE appIdentifier = ? AND identifier = ?
                    AND state IN \(TransferState.activeList) LIMIT 1
                """)
            let insert = try db.cachedStatement(sql: QueuedDownload.insertStatement)
            for download in downloads {
                // A pack's update may be several downloads (the files that changed); the host queues each pack once.
                if download.kind != .assetPack,
                    try Bool.fetchOne(active, arguments: [appIdentifier, download.identifier]) != nil
                {
                    results.append((download, .failure(Self.alreadyScheduled(download))))
                    continue
                }
                let owner = try Self.owner(of: download, db)
                if refusingForeign, let owner, owner != appIdentifier {
                    results.append((download, .failure(Self.belongsToAnotherApp(download))))
                    continue
                }
                if let error = admit(&app, download) {
                    results.append((download, .failure(error)))
                    continue
                }
                let queued = QueuedDownload(
                    appIdentifier: appIdentifier, sequence: nextSequence(),
                    download: owner == nil ? download : Self.renamed(download), foreground: foreground)
                try insert.execute(arguments: StatementArguments(queued.databaseValues))
                results.append((download, .success(queued)))
            }
            if app != before { try app.update(db) }
            return results
        }
        if app != before { appCache.withLock { $0[appIdentifier] = app } }
        return results
    }

    /// Records a download that failed before it could be queued (refused by policy), so that its failure is
    /// delivered like any other.
    public func recordRefused(_ download: Download, for appIdentifier: String, error: HostError) throws {
        try recordRefused([(download, error)], for: appIdentifier)
    }

    /// Records several refused downloads in one transaction.
    public func recordRefused(_ refused: [(Download, HostError)], for appIdentifier: String) throws {
        guard !refused.isEmpty else { return }
        try database.write { db in
            let insert = try db.cachedStatement(sql: QueuedDownload.insertStatement)
            for (download, error) in refused {
                let unused = try Self.owner(of: download, db) == nil ? download : Self.renamed(download)
                var queued = QueuedDownload(appIdentifier: appIdentifier, sequence: nextSequence(), download: unused)
                queued.state = .failed
                queued.error = error
                try insert.execute(arguments: StatementArguments(queued.databaseValues))
            }
        }
    }

    /// The app whose row holds the download's unique identifier, if any: extension or app code chose it, and may
    /// have reused one (its own, or another app's).
    private static func owner(of download: Download, _ db: Database) throws -> String? {
        guard let identifier = download.uniqueIdentifier else { return nil }
        let statement = try db.cachedStatement(sql: "SELECT appIdentifier FROM download WHERE uniqueIdentifier = ?")
        return try String.fetchOne(statement, arguments: [identifier])
    }

    /// Apple's 100 for a download whose identifier the app's queue holds active.
    static func alreadyScheduled(_ download: Download) -> HostError {
        HostError(
            BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED,
            "a download with identifier '\(download.identifier)' is already scheduled")
    }

    /// Apple's 55 for a download whose unique identifier another app's queue holds: an app reaches its own only.
    public static func belongsToAnotherApp(_ download: Download) -> HostError {
        HostError(BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED, "the download '\(download.identifier)' belongs to another app")
    }

    /// The download under a fresh unique identifier.
    static func renamed(_ download: Download) -> Download {
        var fresh = download
        fresh.uniqueIdentifier = Download.newUniqueIdentifier(group: download.applicationGroupIdentifier)
        return fresh
    }

    // MARK: Downloads

    public func download(_ uniqueIdentifier: String) throws -> QueuedDownload? {
        try database.read { try Self.fetch($0, where: "uniqueIdentifier = ?", [uniqueIdentifier]).first }
    }

    /// Rows of `download` matching a condition, through a cached statement.
    private static func fetch(_ db: Database, where condition: String, _ arguments: StatementArguments = [])
        throws -> [QueuedDownload]
    {
        let statement = try db.cachedStatement(sql: "SELECT \(QueuedDownload.selection) FROM download WHERE \(condition)")
        return try QueuedDownload.fetchAll(statement, arguments: arguments)
    }

    /// Saves what the engine changes in a queued download. Not the download itself, which never changes once queued,
    /// nor `foreground`, which only promotion and demotion change, while the row may be moving.
    public func save(_ download: QueuedDownload) throws {
        try database.write { try Self.saveState(download, db: $0) }
    }

    /// Saves several downloads in one transaction.
    public func save(_ downloads: [QueuedDownload]) throws {
        guard !downloads.isEmpty else { return }
        try database.write { db in
            for download in downloads { try Self.saveState(download, db: db) }
        }
    }

    private static func saveState(_ download: QueuedDownload, db: Database) throws {
        // deliveredAt is the moment a row was first saved as delivered: what pruneDelivered counts from.
        let statement = try db.cachedStatement(sql: """
            UPDATE download SET state = ?, bytesReceived = ?, etag = ?, lastModified = ?, attempts = ?, retryAt = ?,
                errorCode = ?, errorDomain = ?, errorMessage = ?, filePath = ?, deliveryAttempts = ?, delivered = ?,
                claim = ?, deliveredAt = CASE WHEN ? THEN COALESCE(deliveredAt, ?) END
            WHERE uniqueIdentifier = ?
            """)
        try statement.execute(arguments: [
            download.state.rawValue, download.bytesReceived, download.etag, download.lastModified, download.attempts,
            download.retryAt?.timeIntervalSince1970, download.error?.code, download.error?.domain,
            download.error?.message, download.filePath, download.deliveryAttempts, download.delivered,
            download.claim, download.delivered, Date().timeIntervalSince1970, download.uniqueIdentifier,
        ])
        guard db.changesCount == 1 else { throw QueueError.unknownDownload(download.uniqueIdentifier) }
    }

    /// Marks downloads as moving, in one transaction, and returns them so; one that is no longer waiting (cancelled,
    /// or already moving) is left out.
    public func startTransfers(_ downloads: [QueuedDownload]) throws -> [QueuedDownload] {
        guard !downloads.isEmpty else { return [] }
        return try database.write { db in
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
    }

    /// An app's scheduled and in-flight downloads (Apple's fetchCurrentDownloads), in queue order.
    public func activeDownloads(for appIdentifier: String) throws -> [QueuedDownload] {
        try database.read { db in
            try Self.fetch(db, where: "\(Self.activeCondition) ORDER BY sequence", [appIdentifier])
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

    /// Every download of an app, in queue order.
    public func downloads(for appIdentifier: String) throws -> [QueuedDownload] {
        try database.read { try Self.fetch($0, where: "appIdentifier = ? ORDER BY sequence", [appIdentifier]) }
    }

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

        /// Pending completions are counted up to this many: the engine only compares the count with a batch's size,
        /// and a count that went further would cost a turn time in proportion to the queue.
        public static let countLimit = 1024

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

    /// Deletes the rows of downloads whose completion was delivered before `cutoff`, and returns how many went. Such
    /// a row serves nothing once delivered (no answer of the API lists it, and its file is the app's), so a
    /// long-lived service keeps a bounded queue: SQLite reuses the freed pages. Batches of 10,000 a transaction keep
    /// a long backlog from holding the writer.
    @discardableResult
    public func pruneDelivered(before cutoff: Date) throws -> Int {
        var total = 0
        while true {
            let deleted = try database.write { db in
                try db.execute(
                    sql: """
                        DELETE FROM download WHERE rowid IN
                            (SELECT rowid FROM download WHERE deliveredAt < ? AND delivered = 1 LIMIT 10000)
                        """,
                    arguments: [cutoff.timeIntervalSince1970])
                return db.changesCount
            }
            total += deleted
            if deleted < 10000 { return total }
        }
    }

    /// Cancels an active download (by unique identifier when given, else by identifier); false when none matched.
    public func cancel(appIdentifier: String, uniqueIdentifier: String?, identifier: String) throws -> QueuedDownload? {
        try database.write { db in
            guard let found = try Self.active(db, appIdentifier, uniqueIdentifier, identifier) else { return nil }
            try db.execute(sql: "DELETE FROM download WHERE uniqueIdentifier = ?", arguments: [found.uniqueIdentifier])
            return found
        }
    }

    /// Finished and failed downloads whose completion has not been delivered, oldest first (at most `limit`).
    ///
    /// Asset-pack downloads are left out unless `assetPacks`: the host installs them itself, and they never reach an
    /// app's delegate or an extension.
    /// - Parameter claimed: those nobody holds (false), those a receiver holds (true), or all (nil).
    public func pendingCompletions(
        for appIdentifier: String, limit: Int? = nil, assetPacks: Bool = false, claimed: Bool? = false
    ) throws -> [QueuedDownload] {
        let kind = "kind \(assetPacks ? "=" : "!=") \(Download.Kind.assetPack.rawValue)"
        let claim = claimed.map { $0 ? " AND claim IS NOT NULL" : " AND claim IS NULL" } ?? ""
        return try database.read { db in
            try Self.fetch(
                db, where: "\(Self.pendingCondition) AND \(kind)\(claim) ORDER BY sequence LIMIT ?",
                [appIdentifier, limit ?? -1])
        }
    }

    /// How many completions of an app wait to be delivered.
    func pendingCompletionCount(for appIdentifier: String) throws -> Int {
        try database.read { db in
            try Int.fetchOne(
                db.cachedStatement(sql: "SELECT COUNT(*) FROM download WHERE \(Self.pendingCondition)"),
                arguments: [appIdentifier]) ?? 0
        }
    }

    /// An app's finished and failed downloads not yet delivered (one argument: the app). Active rows are never
    /// delivered, so one index, (appIdentifier, delivered, state), serves this and `activeCondition`.
    static let pendingCondition = "appIdentifier = ? AND delivered = 0 AND state IN ('finished', 'failed')"
    /// An app's active downloads (one argument: the app).
    static let activeCondition = """
        appIdentifier = ? AND delivered = 0 AND state IN \(TransferState.activeList)
        """

    /// Whether an app has active downloads (essential ones only, when `essential`).
    public func hasActiveDownloads(for appIdentifier: String, essential: Bool = false) throws -> Bool {
        try database.read { db in
            let statement = try db.cachedStatement(
                sql: "SELECT 1 FROM download WHERE \(Self.activeCondition)\(essential ? " AND isEssential" : "") LIMIT 1")
            return try Bool.fetchOne(statement, arguments: [appIdentifier]) != nil
        }
    }

    /// Whether an app has finished or failed asset-pack downloads not yet installed (or reported), essential ones only
    /// when `essential`: an essential pack counts as done for launch once it is installed, not once it is downloaded.
    public func hasPendingPackCompletions(for appIdentifier: String, essential: Bool) throws -> Bool {
        try database.read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT 1 FROM download WHERE \(Self.pendingCondition) AND kind = \(Download.Kind.assetPack.rawValue)
                    \(essential ? " AND isEssential" : "") LIMIT 1
                    """)
            return try Bool.fetchOne(statement, arguments: [appIdentifier]) != nil
        }
    }

    /// Whether an app has anything left to do: active downloads or undelivered completions.
    public func hasWork(for appIdentifier: String) throws -> Bool {
        try hasActiveDownloads(for: appIdentifier) || pendingCompletionCount(for: appIdentifier) > 0
    }

    /// Promotes an app's active download to the foreground (by unique identifier when given, else by identifier):
    /// it starts now, before every background download; one waiting to retry does not wait any longer.
    public func promote(appIdentifier: String, uniqueIdentifier: String?, identifier: String) throws -> QueuedDownload? {
        try database.write { db in
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
        try database.write { db in
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

    /// After a crash, downloads that were moving are queued again (their partial files stay, to be resumed).
    public func recoverInterruptedTransfers() throws {
        try database.write { db in
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
