import Crypto
import HostVocabulary
import Vocabulary

/// Where a queued download's bytes lie in the data root, by its unique identifier: the queue's key is also the
/// name of its files, so that a host killed at any moment finds them again from the row alone.
extension DataRoot {
    /// Where a download's bytes arrive.
    public func partialPath(for uniqueIdentifier: String) -> String {
        "\(transfersPath)/\(Self.fileName(uniqueIdentifier)).part"
    }

    /// Where a finished download's file waits in `deliveries(for:)`.
    public func finishedPath(for uniqueIdentifier: String, appGroupIdentifier: String) -> String {
        "\(deliveriesPath(for: appGroupIdentifier))/\(Self.fileName(uniqueIdentifier))"
    }

    /// The longest name `fileName` makes: a file name is at most 255 bytes, and a name takes a suffix of up to 7
    /// (`.part`, `.failed`).
    public static let longestFileName = 248

    /// The file name for a download's unique identifier, which extension code chose: every byte outside
    /// `A-Z a-z 0-9 -` is percent-encoded, so the name never holds a `/` or is `..`, and two identifiers never
    /// share a name. A name that would be longer than `longestFileName` (a unique identifier may be 1,024 bytes,
    /// Apple's own holds the app group's identifier, and each `.` takes three) is its first 160 bytes, `~`, and the
    /// SHA-256 of the whole identifier: `~` is encoded in every other name, and no one can choose an identifier
    /// whose name is another's. Names that fit are the ones earlier releases made, so a data root carries over.
    public static func fileName(_ uniqueIdentifier: String) -> String {
        let encoded = percentEncoded(uniqueIdentifier)
        guard encoded.utf8.count > longestFileName else { return encoded }
        // Cut where an escape begins or ends, never inside one.
        var prefix = encoded.utf8.prefix(160)
        if let escape = prefix.suffix(2).firstIndex(of: UInt8(ascii: "%")) { prefix = prefix[..<escape] }
        let digest = SHA256.hash(data: Array(uniqueIdentifier.utf8))
        return String(decoding: prefix, as: UTF8.self) + "~" + digest.map { hex($0) }.joined()
    }

    private static func hex(_ byte: UInt8) -> String {
        String(decoding: [hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]], as: UTF8.self)
    }

    private static func percentEncoded(_ text: String) -> String {
        // Written into the string's storage in one piece, not a scalar at a time: it runs twice a transfer
        // (docs/performance/DECISIONS.md #17).
        let utf8 = text.utf8
        return String(unsafeUninitializedCapacity: utf8.count * 3) { name in
            var count = 0
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                    name[count] = byte
                    count += 1
                default:
                    name[count] = UInt8(ascii: "%")
                    name[count + 1] = hexDigits[Int(byte >> 4)]
                    name[count + 2] = hexDigits[Int(byte & 0xF)]
                    count += 3
                }
            }
            return count
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
}
