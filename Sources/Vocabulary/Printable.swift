extension String {
    /// The text as it may be printed when another party wrote it (an extension, an app, a server): control
    /// characters escaped (`\u{a}`), backslashes doubled, and cut at `limit` characters with the count of the rest,
    /// so that it can neither forge a line of output nor flood it.
    public func printable(limit: Int = 1000) -> String {
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
