import CBAExtension
import GRDB
import Vocabulary

/// Admission: downloads queued for an app in one transaction, refused with Apple's codes where they must be.
extension QueueStore {

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
        let results = try write { db in
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
                try queued.insert(with: insert)
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
        try write { db in
            let insert = try db.cachedStatement(sql: QueuedDownload.insertStatement)
            for (download, error) in refused {
                let unused = try Self.owner(of: download, db) == nil ? download : Self.renamed(download)
                var queued = QueuedDownload(appIdentifier: appIdentifier, sequence: nextSequence(), download: unused)
                queued.state = .failed
                queued.error = error
                try queued.insert(with: insert)
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
}
