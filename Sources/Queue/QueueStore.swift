import CBAExtension
import ExtensionRuntime
import Foundation
import GRDB

/// The durable queue: every app and every download, in one SQLite database (WAL mode), written in a transaction
/// at every state change, so that a host killed at any moment restarts with nothing lost.
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

    public func save(_ download: QueuedDownload) throws {
        try database.write { try download.update($0) }
    }

    /// An app's scheduled and in-flight downloads (Apple's fetchCurrentDownloads), in queue order.
    public func activeDownloads(for appIdentifier: String) throws -> [QueuedDownload] {
        try database.read { db in
            try QueuedDownload
                .filter(Column("appIdentifier") == appIdentifier)
                .filter([TransferState.queued, .downloading, .waitingToRetry, .waitingForNetwork].contains(Column("state")))
                .order(Column("sequence"))
                .fetchAll(db)
        }
    }

    /// Every download of an app, in queue order.
    public func downloads(for appIdentifier: String) throws -> [QueuedDownload] {
        try database.read { db in
            try QueuedDownload.filter(Column("appIdentifier") == appIdentifier).order(Column("sequence")).fetchAll(db)
        }
    }

    /// Downloads that may start now, best first: foreground, then essential before non-essential, then priority,
    /// then age; an app's non-essential background downloads wait until none of its essential ones is active.
    public func runnable(now: Date) throws -> [QueuedDownload] {
        try database.read { db in
            let candidates = try QueuedDownload
                .filter(
                    Column("state") == TransferState.queued
                        || ([TransferState.waitingToRetry, .waitingForNetwork].contains(Column("state"))
                            && Column("retryAt") <= now))
                .order(Column("foreground").desc, Column("isEssential").desc, Column("priority").desc, Column("sequence"))
                .fetchAll(db)
            let appsWithEssentials = try Set(
                String.fetchAll(
                    db,
                    sql: """
                        SELECT DISTINCT appIdentifier FROM download
                        WHERE isEssential AND state IN ('queued', 'downloading', 'waitingToRetry', 'waitingForNetwork')
                        """))
            return candidates.filter {
                $0.isEssential || $0.foreground || !appsWithEssentials.contains($0.appIdentifier)
            }
        }
    }

    /// The earliest moment a waiting download becomes runnable, if any is waiting.
    public func nextRetry() throws -> Date? {
        try database.read { db in
            try Date.fetchOne(
                db,
                sql: "SELECT MIN(retryAt) FROM download WHERE state IN ('waitingToRetry', 'waitingForNetwork')")
        }
    }

    /// Cancels an active download (by unique identifier when given, else by identifier); false when none matched.
    public func cancel(appIdentifier: String, uniqueIdentifier: String?, identifier: String) throws -> QueuedDownload? {
        try database.write { db in
            guard let found = try Self.active(db, appIdentifier, uniqueIdentifier, identifier) else { return nil }
            try found.delete(db)
            return found
        }
    }

    /// Finished and failed downloads whose completion has not been delivered, oldest first.
    public func pendingCompletions(for appIdentifier: String) throws -> [QueuedDownload] {
        try database.read { db in
            try QueuedDownload
                .filter(Column("appIdentifier") == appIdentifier && Column("delivered") == false)
                .filter([TransferState.finished, .failed].contains(Column("state")))
                .order(Column("sequence"))
                .fetchAll(db)
        }
    }

    /// Whether an app has anything left to do: active downloads or undelivered completions.
    public func hasWork(for appIdentifier: String) throws -> Bool {
        try database.read { db in
            try QueuedDownload
                .filter(Column("appIdentifier") == appIdentifier)
                .filter(
                    [TransferState.queued, .downloading, .waitingToRetry, .waitingForNetwork].contains(Column("state"))
                        || Column("delivered") == false)
                .fetchCount(db) > 0
        }
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
