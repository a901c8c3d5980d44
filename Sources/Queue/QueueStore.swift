import CBAExtension
import ExtensionRuntime
import Foundation
import GRDB

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
/// Thread rule: any thread; GRDB serializes writes.
public final class QueueStore: Sendable {
    private let database: DatabasePool

    /// Opens (creating) the queue at `path`.
    public init(path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        database = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(database)
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
                let download = try JSONDecoder().decode(ExtensionDownload.self, from: json)
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
        return migrator
    }

    // MARK: Apps

    public func app(_ appIdentifier: String) throws -> AppRecord? {
        try database.read { try AppRecord.fetchOne($0, key: appIdentifier) }
    }

    public func apps() throws -> [AppRecord] {
        try database.read { try AppRecord.fetchAll($0) }
    }

    /// Installs or updates an app's record. An update keeps what it has used of its allowances and whether it has
    /// launched.
    public func install(_ app: AppRecord) throws {
        try database.write { db in
            var record = app
            if let existing = try AppRecord.fetchOne(db, key: app.appIdentifier) {
                record.usedBytes = existing.usedBytes
                record.usedEssentialBytes = existing.usedEssentialBytes
                record.launched = existing.launched
            }
            try record.save(db)
        }
    }

    /// Runs `body` on an app's record inside one transaction and saves what it changed.
    public func updateApp<T>(_ appIdentifier: String, _ body: (inout AppRecord) throws -> T) throws -> T {
        try update(AppRecord.self, appIdentifier, body)
    }

    /// Runs `body` on the record of an app inside one transaction and saves what it changed.
    private func update<Record: FetchableRecord & PersistableRecord & TableRecord, T>(
        _ type: Record.Type, _ appIdentifier: String, _ body: (inout Record) throws -> T
    ) throws -> T {
        try database.write { db in
            guard var record = try Record.fetchOne(db, key: appIdentifier) else {
                throw QueueError.unknownApp(appIdentifier)
            }
            let result = try body(&record)
            try record.update(db)
            return result
        }
    }

    /// Removes an app and everything the queue holds for it; returns its downloads (the running ones' transfers are
    /// to be stopped, and partial files deleted).
    public func uninstall(_ appIdentifier: String) throws -> [QueuedDownload] {
        try database.write { db in
            guard try AppRecord.exists(db, key: appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
            let downloads = try QueuedDownload.filter(Column("appIdentifier") == appIdentifier).fetchAll(db)
            try QueuedDownload.filter(Column("appIdentifier") == appIdentifier).deleteAll(db)
            _ = try AppRecord.deleteOne(db, key: appIdentifier)
            return downloads
        }
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
        try update(AppSchedule.self, appIdentifier, body)
    }

    /// The highest sequence number given so far: downloads queued later have higher ones.
    public func lastSequence() throws -> Int64 {
        try database.read { try Int64.fetchOne($0, sql: "SELECT MAX(sequence) FROM download") ?? 0 }
    }

    // MARK: Admission

    /// Queues downloads for an app in one transaction. `admit` decides each one given the app's record (which it may
    /// change, e.g. to count allowance) and returns an error to refuse it. An identifier already active in the
    /// app's queue is refused with Apple's 100.
    public func enqueue(
        _ downloads: [ExtensionDownload], for appIdentifier: String, foreground: Bool = false,
        admit: (inout AppRecord, ExtensionDownload) -> HostError?
    ) throws -> [(download: ExtensionDownload, result: Result<QueuedDownload, HostError>)] {
        try database.write { db in
            guard var app = try AppRecord.fetchOne(db, key: appIdentifier) else {
                throw QueueError.unknownApp(appIdentifier)
            }
            var sequence = try Int64.fetchOne(db, sql: "SELECT MAX(sequence) FROM download") ?? 0
            var results: [(ExtensionDownload, Result<QueuedDownload, HostError>)] = []
            for download in downloads {
                if try Self.isActive(db, app: appIdentifier, identifier: download.identifier) {
                    results.append((download, .failure(HostError(
                        BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED,
                        "a download with identifier '\(download.identifier)' is already scheduled"))))
                    continue
                }
                if let error = admit(&app, download) {
                    results.append((download, .failure(error)))
                    continue
                }
                sequence += 1
                let queued = QueuedDownload(
                    appIdentifier: appIdentifier, sequence: sequence, download: try Self.unused(download, db),
                    foreground: foreground)
                try queued.insert(db)
                results.append((download, .success(queued)))
            }
            try app.update(db)
            return results
        }
    }

    /// Records a download that failed before it could be queued (refused by policy), so that its failure is
    /// delivered like any other.
    public func recordRefused(_ download: ExtensionDownload, for appIdentifier: String, error: HostError) throws {
        try database.write { db in
            let sequence = (try Int64.fetchOne(db, sql: "SELECT MAX(sequence) FROM download") ?? 0) + 1
            var queued = QueuedDownload(appIdentifier: appIdentifier, sequence: sequence, download: try Self.unused(download, db))
            queued.state = .failed
            queued.error = error
            try queued.insert(db)
        }
    }

    /// The download with a unique identifier no row has: extension code chose it, and may have reused one (its
    /// own, or another app's), which gets a fresh one.
    private static func unused(_ download: ExtensionDownload, _ db: Database) throws -> ExtensionDownload {
        guard let identifier = download.uniqueIdentifier, try QueuedDownload.exists(db, key: identifier) else {
            return download
        }
        var fresh = download
        fresh.uniqueIdentifier = ExtensionDownload.newUniqueIdentifier(group: download.applicationGroupIdentifier)
        return fresh
    }

    private static func isActive(_ db: Database, app: String, identifier: String) throws -> Bool {
        try QueuedDownload
            .filter(Column("appIdentifier") == app && Column("identifier") == identifier)
            .filter([TransferState.queued, .downloading, .waitingToRetry, .waitingForNetwork].contains(Column("state")))
            .fetchCount(db) > 0
    }

    // MARK: Downloads

    public func download(_ uniqueIdentifier: String) throws -> QueuedDownload? {
        try database.read { try QueuedDownload.fetchOne($0, key: uniqueIdentifier) }
    }

    /// Whether a download is in the queue (it is gone once cancelled).
    public func contains(_ uniqueIdentifier: String) throws -> Bool {
        try database.read { try QueuedDownload.exists($0, key: uniqueIdentifier) }
    }

    /// Saves what the engine changes in a queued download. Not the download itself, which never changes once queued
    /// and is costly to encode (saves are the engine's hottest writes), nor `foreground`, which only promotion and
    /// demotion change, while the row may be moving.
    public func save(_ download: QueuedDownload) throws {
        try database.write { try Self.saveState(download, db: $0) }
    }

    /// Saves several downloads in one transaction.
    public func save(_ downloads: [QueuedDownload]) throws {
        try database.write { db in
            for download in downloads { try Self.saveState(download, db: db) }
        }
    }

    private static func saveState(_ download: QueuedDownload, db: Database) throws {
        let error = try download.error.map {
            String(decoding: try QueuedDownload.databaseJSONEncoder(for: "error").encode($0), as: UTF8.self)
        }
        try db.execute(
            sql: """
                UPDATE download SET state = ?, bytesReceived = ?, etag = ?, lastModified = ?, attempts = ?, retryAt = ?,
                    error = ?, filePath = ?, deliveryAttempts = ?, delivered = ?
                WHERE uniqueIdentifier = ?
                """,
            arguments: [
                download.state, download.bytesReceived, download.etag, download.lastModified, download.attempts,
                download.retryAt, error, download.filePath, download.deliveryAttempts, download.delivered,
                download.uniqueIdentifier,
            ])
        guard db.changesCount == 1 else {
            throw RecordError.recordNotFound(
                databaseTableName: QueuedDownload.databaseTableName,
                key: ["uniqueIdentifier": download.uniqueIdentifier.databaseValue])
        }
    }

    /// Marks downloads as moving, in one transaction, and returns them so; one that is no longer waiting (cancelled,
    /// or already moving) is left out.
    public func startTransfers(_ downloads: [QueuedDownload]) throws -> [QueuedDownload] {
        guard !downloads.isEmpty else { return [] }
        return try database.write { db in
            var started: [QueuedDownload] = []
            for var download in downloads {
                try db.execute(
                    sql: """
                        UPDATE download SET state = 'downloading', attempts = attempts + 1, retryAt = NULL
                        WHERE uniqueIdentifier = ? AND state IN ('queued', 'waitingToRetry', 'waitingForNetwork')
                        """,
                    arguments: [download.uniqueIdentifier])
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
            try Self.active(appIdentifier).order(Column("sequence")).fetchAll(db)
        }
    }

    /// Every download of an app, in queue order.
    public func downloads(for appIdentifier: String) throws -> [QueuedDownload] {
        try database.read { db in
            try QueuedDownload.filter(Column("appIdentifier") == appIdentifier).order(Column("sequence")).fetchAll(db)
        }
    }

    /// What the engine asks of the queue at every turn, read in one transaction: what may start now, and per app
    /// whether it has downloads active and how many completions wait.
    public struct Snapshot: Sendable {
        /// Downloads that may start now, best first (see `runnable`).
        public var runnable: [QueuedDownload]
        public var pendingCompletions: [String: Int]
        public var appsWithActiveDownloads: Set<String>
        /// The earliest moment a waiting download becomes runnable, if any is waiting.
        public var nextRetry: Date?

        public func hasWork(_ appIdentifier: String) -> Bool {
            appsWithActiveDownloads.contains(appIdentifier) || pendingCompletions[appIdentifier, default: 0] > 0
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
                pendingCompletions: [:], appsWithActiveDownloads: [], nextRetry: try Self.nextRetry(db))
            for app in apps {
                snapshot.pendingCompletions[app] = try Self.pending(app).fetchCount(db)
                if try !Self.active(app).isEmpty(db) { snapshot.appsWithActiveDownloads.insert(app) }
            }
            return snapshot
        }
    }

    /// Downloads that may start now, best first: foreground, then essential before non-essential, then priority,
    /// then age; an app's non-essential background downloads wait until none of its essential ones is active.
    ///
    /// Foreground downloads are all returned (the limits do not hold them back). Background ones are at most
    /// `backgroundLimit`, none to a host in `saturatedHosts`: the engine asks only for what it can start, so that
    /// a long queue costs it no more than a short one.
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

    private static func runnable(
        _ db: Database, now: Date, apps: Set<String>?, excluding: Set<String>, saturatedHosts: Set<String>,
        backgroundLimit: Int?
    ) throws -> [QueuedDownload] {
        var base = QueuedDownload.order(Column("isEssential").desc, Column("priority").desc, Column("sequence"))
        if let apps { base = base.filter(apps.contains(Column("appIdentifier"))) }
        if !excluding.isEmpty { base = base.filter(!excluding.contains(Column("uniqueIdentifier"))) }
        // Queued rows come from the front of `download_runnable`; rows waiting to retry are few.
        let queued = base.filter(Column("state") == TransferState.queued)
        let due = base.filter([TransferState.waitingToRetry, .waitingForNetwork].contains(Column("state")))
            .filter(Column("retryAt") <= now)
        let foreground = try Self.merged(
            queued.filter(Column("foreground") == true).fetchAll(db),
            due.filter(Column("foreground") == true).fetchAll(db), limit: nil)

        func background(_ request: QueryInterfaceRequest<QueuedDownload>) -> QueryInterfaceRequest<QueuedDownload> {
            var request = request.filter(Column("foreground") == false)
                .filter(sql: """
                    isEssential OR appIdentifier NOT IN (
                        SELECT appIdentifier FROM download
                        WHERE isEssential = 1
                            AND state IN ('queued', 'downloading', 'waitingToRetry', 'waitingForNetwork'))
                    """)
            if !saturatedHosts.isEmpty { request = request.filter(!saturatedHosts.contains(Column("host"))) }
            if let backgroundLimit { request = request.limit(max(0, backgroundLimit)) }
            return request
        }
        if backgroundLimit.map({ $0 <= 0 }) == true { return foreground }
        return try foreground
            + Self.merged(
                background(queued).fetchAll(db), background(due).fetchAll(db), limit: backgroundLimit)
    }

    /// Two lists in run order, merged in run order: essential first, then priority, then age.
    private static func merged(_ a: [QueuedDownload], _ b: [QueuedDownload], limit: Int?) -> [QueuedDownload] {
        guard !b.isEmpty else { return a }
        let all = (a + b).sorted { x, y in
            if x.isEssential != y.isEssential { return x.isEssential }
            if x.priority != y.priority { return x.priority > y.priority }
            return x.sequence < y.sequence
        }
        return limit.map { Array(all.prefix($0)) } ?? all
    }

    /// The earliest moment a waiting download becomes runnable, if any is waiting.
    public func nextRetry() throws -> Date? {
        try database.read { try Self.nextRetry($0) }
    }

    private static func nextRetry(_ db: Database) throws -> Date? {
        try Date.fetchOne(
            db, sql: "SELECT MIN(retryAt) FROM download WHERE state IN ('waitingToRetry', 'waitingForNetwork')")
    }

    /// Cancels an active download (by unique identifier when given, else by identifier); false when none matched.
    public func cancel(appIdentifier: String, uniqueIdentifier: String?, identifier: String) throws -> QueuedDownload? {
        try database.write { db in
            guard let found = try Self.active(db, appIdentifier, uniqueIdentifier, identifier) else { return nil }
            try found.delete(db)
            return found
        }
    }

    /// Finished and failed downloads whose completion has not been delivered, oldest first (at most `limit`).
    public func pendingCompletions(for appIdentifier: String, limit: Int? = nil) throws -> [QueuedDownload] {
        try database.read { db in
            var request = Self.pending(appIdentifier).order(Column("sequence"))
            if let limit { request = request.limit(limit) }
            return try request.fetchAll(db)
        }
    }

    /// How many completions of an app wait to be delivered.
    public func pendingCompletionCount(for appIdentifier: String) throws -> Int {
        try database.read { try Self.pending(appIdentifier).fetchCount($0) }
    }

    private static func pending(_ appIdentifier: String) -> QueryInterfaceRequest<QueuedDownload> {
        QueuedDownload
            .filter(Column("appIdentifier") == appIdentifier && Column("delivered") == false)
            .filter([TransferState.finished, .failed].contains(Column("state")))
    }

    /// Whether an app has active downloads (essential ones only, when `essential`).
    public func hasActiveDownloads(for appIdentifier: String, essential: Bool = false) throws -> Bool {
        try database.read { db in
            var request = Self.active(appIdentifier)
            if essential { request = request.filter(Column("isEssential")) }
            return try !request.isEmpty(db)
        }
    }

    /// An app's active downloads. They are never delivered: saying so lets one index serve this and `pending`.
    private static func active(_ appIdentifier: String) -> QueryInterfaceRequest<QueuedDownload> {
        QueuedDownload.filter(Column("appIdentifier") == appIdentifier && Column("delivered") == false)
            .filter([TransferState.queued, .downloading, .waitingToRetry, .waitingForNetwork].contains(Column("state")))
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
            try found.update(db)
            return found
        }
    }

    /// An app's active download, by unique identifier when given, else by identifier.
    private static func active(_ db: Database, _ appIdentifier: String, _ uniqueIdentifier: String?, _ identifier: String)
        throws -> QueuedDownload?
    {
        var request = QueuedDownload.filter(Column("appIdentifier") == appIdentifier)
            .filter([TransferState.queued, .downloading, .waitingToRetry, .waitingForNetwork].contains(Column("state")))
        if let uniqueIdentifier {
            request = request.filter(Column("uniqueIdentifier") == uniqueIdentifier)
        } else {
            request = request.filter(Column("identifier") == identifier)
        }
        return try request.fetchOne(db)
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
        try database.read { try String.fetchOne($0, sql: "SELECT appIdentifier FROM download WHERE uniqueIdentifier = ?", arguments: [uniqueIdentifier]) }
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

    public var description: String {
        switch self {
        case .unknownApp(let app): "no app \(app) is installed in the queue"
        }
    }
}
