import Foundation
import GRDB

/// What the service last did for an app that a package declared in a folder (docs/PACKAGING.md): the
/// folder, the version (`CFBundleVersion`) it acted on, and whether that action is done. A row whose action is not
/// done was interrupted (the service was killed in it): the next start carries it out again.
public struct DeclaredAppRecord: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "declaredApp"

    public enum State: String, Codable, Sendable {
        /// The install request is under way for `version`.
        case installing
        /// The update request is under way for `version`.
        case updating
        /// `version` is installed and its request ran.
        case installed
        /// The folder stayed gone: the app is being uninstalled.
        case uninstalling
    }

    public var appIdentifier: String
    public var folder: String
    public var version: String
    public var state: State

    public init(appIdentifier: String, folder: String, version: String, state: State) {
        self.appIdentifier = appIdentifier
        self.folder = folder
        self.version = version
        self.state = state
    }
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
        try database.write { try record.save($0) }
    }

    public func removeDeclaredApp(_ appIdentifier: String) throws {
        _ = try database.write { try DeclaredAppRecord.deleteOne($0, key: appIdentifier) }
    }
}
