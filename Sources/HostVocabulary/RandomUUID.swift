import Foundation
import Vocabulary

extension UUID {
    /// A random (version 4) UUID from the system's generator (`getrandom(2)`). Foundation's `UUID()` on Linux opens,
    /// reads and closes `/dev/urandom` each time, on the path of each `scheduleDownload` (docs/performance/
    /// DECISIONS.md #36).
    public static func random() -> UUID {
        withUnsafeBytes(of: UUIDText.randomBytes()) { UUID(uuid: $0.load(as: uuid_t.self)) }
    }

    /// `uuidString`, written as `UUIDText.upperHex` writes it.
    public var upperHexString: String { withUnsafeBytes(of: uuid) { UUIDText.upperHex($0) } }
}

extension Download {
    /// Apple's form of a system-provided identifier, with a given UUID.
    public static func uniqueIdentifier(group: String, uuid: UUID) -> String {
        uniqueIdentifier(group: group, uuidText: uuid.upperHexString)
    }
}
