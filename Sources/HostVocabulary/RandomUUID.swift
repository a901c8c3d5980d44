import Foundation
import Vocabulary

extension UUID {
    /// A random (version 4) UUID from the system's generator (`getrandom(2)`). Foundation's `UUID()` on Linux opens,
    /// reads and closes `/dev/urandom` each time, which was a fifth of an app's side of each `scheduleDownload`
    /// (docs/PERFORMANCE.md).
    public static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // RFC 4122 variant
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
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
