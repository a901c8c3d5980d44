extension String {
    /// The text as it may be printed when another party wrote it (an extension, an app, a server): control
    /// characters escaped (`\u{a}`), backslashes doubled, and cut at `limit` characters with the count of the rest,
    /// so that it can neither forge a line of output nor flood it.
    public func printable(limit: Int = 1000) -> String {
        // Most text is short printable ASCII, which stays as it is: looked over a byte at a time, not rebuilt.
        let utf8 = utf8
        if utf8.count <= limit, utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }) {
            return self
        }
        var out = ""
        var count = 0
        for scalar in unicodeScalars {
            guard count < limit else { break }
            count += 1
            switch scalar {
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value):
                out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        let rest = unicodeScalars.count - count
        return rest > 0 ? out + "… (\(rest) more characters)" : out
    }
}

extension String {
    /// A URL as it may be printed: without the credentials of its authority (`user:password@`), which never reach
    /// a log or an event, then `printable`. Works on text that does not parse as a URL too.
    public func printableURL(limit: Int = 1000) -> String { withoutUserInfo.printable(limit: limit) }

    /// The text with the user information of a URL's authority removed.
    public var withoutUserInfo: String {
        // By hand, not `firstRange(of:)`: that one is _StringProcessing's, almost a megabyte in the app library.
        let characters = Array(self)
        guard let schemeEnd = (0..<max(0, characters.count - 2)).first(where: {
            characters[$0] == ":" && characters[$0 + 1] == "/" && characters[$0 + 2] == "/"
        }) else { return self }
        let authorityStart = index(startIndex, offsetBy: schemeEnd + 3)
        let authorityEnd = self[authorityStart...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? endIndex
        guard let at = self[authorityStart..<authorityEnd].lastIndex(of: "@") else { return self }
        return String(self[..<authorityStart]) + String(self[index(after: at)...])
    }
}

extension Sequence where Element == UInt8 {
    /// The bytes as lowercase hexadecimal, two digits each (a SHA-256 digest as manifests and reports write it).
    public var lowercaseHex: String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
