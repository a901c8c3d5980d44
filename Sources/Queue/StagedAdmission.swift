import CBAExtension
import Foundation
import GRDB
import HostVocabulary
import Synchronization
import Vocabulary

/// A content request's downloads, admitted as they arrive from its window and queued all at once when it returns:
/// Apple queues nothing from a call that never returned, and a request may return 100,000, which the host should
/// not hold in memory at once.
///
/// Each `stage` call writes rows of `staged_download`, a temporary table of the queue's writer connection, which
/// nothing else reads and which SQLite keeps in a file of its own, outside the WAL, never synced: staging costs no
/// checkpoint, and a host killed meanwhile leaves nothing of it, as the unreturned call's result would be. `commit`
/// moves the rows into the queue in one transaction, and `discard` drops them. What the request holds in memory is
/// the unique identifiers the extension chose, and the allowance it counted, which `commit` adds to the app's.
///
/// Thread rule: one thread at a time (the content request's staging queue, then the request's own).
public final class StagedAdmission {
    private let store: QueueStore
    public let appIdentifier: String
    private let stage: Int64
    /// The app's record when staging began, and as the request's admissions counted it.
    private let before: AppRecord
    private var app: AppRecord
    /// Unique identifiers the extension chose, as staged (rare: Apple's API makes them).
    private var chosenUniqueIdentifiers = Set<String>()
    private var uniqueIdentifiers = UniqueIdentifiers()
    /// Rows staged: the downloads admitted and the ones refused, each of which becomes a row.
    public private(set) var count = 0
    /// The rows of `download` the committed stage became.
    private var committed: ClosedRange<Int64>?
    /// Committed or discarded: no longer counted among the open stages.
    private var ended = false

    /// What the committed stage queued (its refused downloads not counted).
    public struct Summary: Sendable, Equatable {
        public var count = 0
        public var bytes: Int64 = 0
        public var essential = 0
    }

    /// Set by `commit`.
    public private(set) var queued = Summary()

    init(store: QueueStore, app: AppRecord, stage: Int64) {
        self.store = store
        appIdentifier = app.appIdentifier
        self.stage = stage
        before = app
        self.app = app
    }

    /// Admits downloads as `QueueStore.enqueue` does, into the stage. Each comes with what its checks found already
    /// (shape, an identifier the request returned before), and its URL's host when the checks found it
    /// (`QueuedDownload.host(of:)`: the URL is then not parsed again here); one without an error is then refused
    /// with Apple's 100 if its identifier is active in the queue, else put to `admit` with its index in `checked`
    /// (the app's policy, which may count against the record). A refused download is staged as a failed row, to be
    /// delivered like any failure once the request is committed.
    public func stage(
        _ checked: [(download: Download, error: HostError?, host: String?)],
        admit: (inout AppRecord, _ index: Int) -> HostError?
    ) throws {
        try store.write { db in
            // Which of the packet's identifiers the queue has active, in one question rather than one a download.
            let active = try db.cachedStatement(sql: """
                SELECT identifier FROM main.download WHERE appIdentifier = ?
                    AND identifier IN (SELECT value FROM json_each(?))
                    AND state IN \(TransferState.activeList)
                """)
            let packet = JSONText.array(checked.lazy.map(\.download.identifier))
            let activeIdentifiers = Set(try String.fetchAll(active, arguments: [appIdentifier, packet]))
            let insert = try db.cachedStatement(sql: Self.insertStatement)
            for (index, (download, found, host)) in checked.enumerated() {
                var error = found
                if error == nil, activeIdentifiers.contains(download.identifier) {
                    error = QueueStore.alreadyScheduled(download)
                }
                // A unique identifier the extension chose that a row holds (queued, or staged by this request) is
                // replaced, as `enqueue` does.
                let taken = try download.uniqueIdentifier.map { try isTaken($0, db) } ?? false
                if error == nil { error = admit(&app, index) }
                var named = taken ? QueueStore.renamed(download) : download
                if named.uniqueIdentifier == nil { named.uniqueIdentifier = uniqueIdentifiers.next(named) }
                var row = QueuedDownload(
                    appIdentifier: appIdentifier, sequence: store.nextSequence(), download: named, host: host)
                if download.uniqueIdentifier != nil { chosenUniqueIdentifiers.insert(row.uniqueIdentifier) }
                if let error {
                    row.state = .failed
                    row.error = error
                }
                var binder = StatementBinder(insert, count: 1 + QueuedDownload.columns.count)
                binder.add(stage)
                row.giveValues(to: &binder)
                try binder.execute()
                count += 1
            }
        }
    }

    private func isTaken(_ uniqueIdentifier: String, _ db: Database) throws -> Bool {
        if chosenUniqueIdentifiers.contains(uniqueIdentifier) { return true }
        let statement = try db.cachedStatement(sql: "SELECT 1 FROM main.download WHERE uniqueIdentifier = ?")
        return try Bool.fetchOne(statement, arguments: [uniqueIdentifier]) != nil
    }

    /// Queues the stage in one transaction, with what it counted against the app's allowance. A download that the
    /// app scheduled itself meanwhile, with the same identifier, keeps its place: the staged one is refused (100).
    public func commit() throws {
        let counted = (app.usedBytes - before.usedBytes, app.usedEssentialBytes - before.usedEssentialBytes)
        let updated = try store.write { db -> AppRecord? in
            try db.execute(sql: """
                UPDATE staged_download SET state = 'failed', errorCode = ?, errorDomain = 'BAErrorDomain',
                    errorMessage = 'a download with identifier ''' || identifier || ''' is already scheduled'
                WHERE stage = ? AND state = 'queued' AND EXISTS (SELECT 1 FROM download
                    WHERE download.appIdentifier = ? AND download.identifier = staged_download.identifier
                        AND download.state IN \(TransferState.activeList))
                """, arguments: [BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED.rawValue, stage, appIdentifier])
            let last = try Int64.fetchOne(db, sql: "SELECT MAX(rowid) FROM main.download") ?? 0
            try db.execute(sql: """
                INSERT INTO main.download (\(QueuedDownload.selection)) SELECT \(QueuedDownload.selection)
                FROM staged_download WHERE stage = ? ORDER BY rowid
                """, arguments: [stage])
            committed = db.changesCount > 0 ? (last + 1)...(last + Int64(db.changesCount)) : nil
            if let row = try Row.fetchOne(db, sql: """
                SELECT COUNT(*), TOTAL(fileSize), TOTAL(isEssential) FROM staged_download
                WHERE stage = ? AND state = 'queued'
                """, arguments: [stage]) {
                queued = Summary(count: row[0], bytes: Int64(row[1] as Double), essential: Int(row[2] as Double))
            }
            try dropStage(db)
            guard counted != (0, 0), var current = try store.app(appIdentifier) else { return nil }
            current.usedBytes += counted.0
            current.usedEssentialBytes += counted.1
            try current.update(db)
            return current
        }
        if let updated { store.cacheApp(updated) }
    }

    /// Drops the stage: the request did not return, or its window broke the protocol.
    public func discard() throws {
        try store.write { db in try dropStage(db) }
    }

    /// Removes the stage's rows, with the whole table when no other stage is open. Inside the writer's access, so
    /// that a stage begun meanwhile (counted before its table is made) is seen or finds the table gone.
    private func dropStage(_ db: Database) throws {
        let last = !ended && store.openStages.subtract(1, ordering: .relaxed).newValue == 0
        ended = true
        if last {
            try db.execute(sql: "DROP TABLE IF EXISTS temp.staged_download")
        } else if try db.tableExists("staged_download", in: "temp") {
            try db.execute(sql: "DELETE FROM staged_download WHERE stage = ?", arguments: [stage])
        }
    }

    /// The committed rows in `state` (queued, or failed: the refused downloads), in the order they were returned,
    /// a page at a time.
    public func forEachCommitted(_ state: TransferState, _ body: (QueuedDownload) throws -> Void) throws {
        guard let committed else { return }
        var next = committed.lowerBound
        while next <= committed.upperBound {
            let end = min(committed.upperBound, next + 999)
            let page = try store.database.read { db in
                try QueuedDownload.fetchAll(db, sql: """
                    SELECT \(QueuedDownload.selection) FROM main.download
                    WHERE rowid BETWEEN ? AND ? AND state = ? ORDER BY rowid
                    """, arguments: [next, end, state])
            }
            try page.forEach(body)
            next = end + 1
        }
    }

    private static let insertStatement = """
        INSERT INTO staged_download (stage, \(QueuedDownload.selection))
        VALUES (?\(String(repeating: ", ?", count: QueuedDownload.columns.count)))
        """
}

extension QueueStore {
    /// Starts admitting a content request's downloads as they arrive (`StagedAdmission`).
    public func beginStaging(for appIdentifier: String) throws -> StagedAdmission {
        guard let app = try app(appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
        openStages.add(1, ordering: .relaxed)
        do {
            try write { db in
                try db.execute(sql: """
                    CREATE TEMP TABLE IF NOT EXISTS staged_download AS SELECT *, 0 AS stage FROM main.download WHERE 0;
                    CREATE INDEX IF NOT EXISTS temp.staged_download_by_stage ON staged_download(stage);
                    """)
            }
        } catch {
            openStages.subtract(1, ordering: .relaxed)
            throw error
        }
        return StagedAdmission(store: self, app: app, stage: stages.wrappingAdd(1, ordering: .relaxed).newValue)
    }
}

/// The system-provided unique identifiers of one request's downloads, in Apple's form ("<class>.<group>.<UUID>"):
/// each UUID is random in its first 80 bits, drawn once for the request, and counts in its last 48 (the version and
/// variant bits as a random UUID's). One request's rows are then neighbours in the queue's index of unique
/// identifiers, so that its commit touches a few pages of it rather than one a row, and no random draw is made a
/// row. Two requests share an identifier only if they draw the same 74 random bits.
struct UniqueIdentifiers {
    private let base: uuid_t = UUID().uuid
    private var counter: UInt64 = 0

    mutating func next(_ download: Download) -> String {
        counter += 1
        var bytes = base
        withUnsafeMutableBytes(of: &bytes) { raw in
            for index in 0..<6 { raw[15 - index] = UInt8(truncatingIfNeeded: counter >> (8 * UInt64(index))) }
        }
        return Download.uniqueIdentifier(group: download.applicationGroupIdentifier, uuid: UUID(uuid: bytes))
    }
}
