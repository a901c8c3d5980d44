import Foundation
import GRDB
import Vocabulary

/// Stored by its Codable fields, one column each.
extension DeclaredAppRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "declaredApp"
}

extension QueueStore {
    static func createDeclaredApps(_ db: Database) throws {
        try db.create(table: DeclaredAppRecord.databaseTableName) { t in
            t.primaryKey("appIdentifier", .text)
            t.column("folder", .text).notNull()
            t.column("version", .text).notNull()
            t.column("state", .text).notNull()
        }
    }

    public func declaredApps() throws -> [DeclaredAppRecord] {
        try database.read { try DeclaredAppRecord.fetchAll($0) }
    }

    public func saveDeclaredApp(_ record: DeclaredAppRecord) throws {
        try write { try record.save($0) }
    }

    public func removeDeclaredApp(_ appIdentifier: String) throws {
        _ = try write { try DeclaredAppRecord.deleteOne($0, key: appIdentifier) }
    }
}
