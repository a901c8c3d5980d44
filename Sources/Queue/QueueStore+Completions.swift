import Foundation
import GRDB
import Vocabulary

/// Completions: finished and failed downloads waiting to be delivered, and delivered ones pruned.
extension QueueStore {
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

    /// Saves what delivery changes in completions, in one transaction: the delivery attempts, the claim, whether
    /// delivered (and since when), and the file path (cleared once delivered). Delivery changes nothing else of a
    /// row, and naming only these columns leaves the run order's index alone (docs/performance/DECISIONS.md #7).
    /// Throws `unknownDownload` for a row that is gone.
    public func saveDelivery(_ completions: [QueuedDownload]) throws {
        guard !completions.isEmpty else { return }
        try write { db in
            let statement = try db.cachedStatement(sql: """
                UPDATE download SET deliveryAttempts = ?, delivered = ?, claim = ?, filePath = ?,
                    \(Self.deliveredAtAssignment)
                WHERE uniqueIdentifier = ?
                """)
            let now = Date().timeIntervalSince1970
            for completion in completions {
                try statement.execute(arguments: [
                    completion.deliveryAttempts, completion.delivered, completion.claim, completion.filePath,
                    completion.delivered, now, completion.uniqueIdentifier,
                ])
                guard db.changesCount == 1 else { throw QueueError.unknownDownload(completion.uniqueIdentifier) }
            }
        }
    }

    /// Deletes the rows of downloads whose completion was delivered before `cutoff`, and returns how many went. Such
    /// a row serves nothing once delivered (no answer of the API lists it, and its file is the app's), so a
    /// long-lived service keeps a bounded queue: SQLite reuses the freed pages. Batches of 10,000 a transaction keep
    /// a long backlog from holding the writer.
    @discardableResult
    public func pruneDelivered(before cutoff: Date) throws -> Int {
        var total = 0
        while true {
            let deleted = try write { db in
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
}
