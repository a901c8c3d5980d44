import Foundation
import GRDB
import HostVocabulary
import Vocabulary

/// The queue's schema: every migration, in order. A release only ever adds one at the end.
extension QueueStore {
    static var migrator: DatabaseMigrator {
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
        migrator.registerMigration("v12: an app's pending completions counted from the index alone") { db in
            // The engine counts an app's unclaimed completions at every turn; without `claim` in the index each one
            // counted was a seek into the table (docs/performance/DECISIONS.md #6).
            try db.drop(index: "download_by_app_delivered_state")
            try db.create(
                index: "download_by_app_delivered_state", on: "download",
                columns: ["appIdentifier", "delivered", "state", "claim"])
        }
        migrator.registerMigration("v13: the run order walked per app") { db in
            // Slots are shared between apps (`QueueStore.shared`), so a turn walks each app's front of the run
            // order; the app's identifier comes after the state, so that the retries' questions still seek by state.
            try db.drop(index: "download_runnable")
            try db.execute(sql: """
                CREATE INDEX download_runnable
                ON download(state, foreground, appIdentifier, isEssential DESC, priority DESC, sequence)
                """)
        }
        migrator.registerMigration("v14: since when a download has waited for the network") { db in
            try db.alter(table: QueuedDownload.databaseTableName) { t in t.add(column: "offlineSince", .double) }
        }
        migrator.registerMigration("v15: the networks a download avoids") { db in
            try db.alter(table: QueuedDownload.databaseTableName) { t in
                t.add(column: "networkAccess", .integer).notNull().defaults(to: 0)
            }
        }
        migrator.registerMigration("v16: whether the desktop shows an app's foreground downloads") { db in
            try db.alter(table: AppRecord.databaseTableName) { t in
                t.add(column: "showsDownloadProgress", .boolean).notNull().defaults(to: false)
            }
        }
        migrator.registerMigration("v17: the folder a sandboxed app's sandbox gives it") { db in
            try db.alter(table: AppRecord.databaseTableName) { t in t.add(column: "sandboxHome", .text) }
        }
        migrator.registerMigration("v18: whether an app's packs may be shared with peers") { db in
            try db.alter(table: AppRecord.databaseTableName) { t in
                t.add(column: "sharesWithPeers", .boolean).notNull().defaults(to: false)
            }
        }
        return migrator
    }
}
