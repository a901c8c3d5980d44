/// UUIDs as text, without Foundation (the app library links this module and must not carry Foundation's ICU data).
public enum UUIDText {
    /// A random (version 4) UUID from the system's generator (`getrandom(2)`), upper-case, in the 8-4-4-4-12 form.
    public static func random() -> String {
        withUnsafeBytes(of: randomBytes()) { upperHex($0) }
    }

    /// The sixteen bytes of a random (version 4) UUID, from the system's generator (`getrandom(2)`).
    public static func randomBytes() -> (UInt64, UInt64) {
        var generator = SystemRandomNumberGenerator()
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // RFC 4122 variant
        }
        return bytes
    }

    /// Sixteen bytes as Foundation's `uuidString` writes them (upper-case hex, 8-4-4-4-12), written directly:
    /// Foundation's on Linux formats with `snprintf`, and each download of a content request is given one
    /// (docs/performance/DECISIONS.md #33).
    public static func upperHex(_ bytes: UnsafeRawBufferPointer) -> String {
        precondition(bytes.count == 16, "a UUID has 16 bytes")
        return String(unsafeUninitializedCapacity: 36) { text in
            var written = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[written] = UInt8(ascii: "-")
                    written += 1
                }
                text[written] = hexDigit(byte >> 4)
                text[written + 1] = hexDigit(byte & 0x0F)
                written += 2
            }
            return written
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }
}
