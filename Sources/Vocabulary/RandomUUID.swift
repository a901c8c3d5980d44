import Foundation

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

    /// `uuidString` (upper-case hex, in the 8-4-4-4-12 form), written directly: Foundation's on Linux formats it
    /// with `snprintf`, which showed in the profile of a content request, each of whose downloads is given one
    /// (docs/PERFORMANCE.md).
    public var upperHexString: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var written = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[written] = UInt8(ascii: "-")
                        written += 1
                    }
                    text[written] = Self.hexDigit(byte >> 4)
                    text[written + 1] = Self.hexDigit(byte & 0x0F)
                    written += 2
                }
                return written
            }
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }
}
