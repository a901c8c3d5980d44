/// JSON text written by hand where Foundation's coders cost more than the work around them: event lines (Engine's
/// `EventJSON`) and the identifiers of a content request's packet, sent to SQLite's `json_each` (Queue's
/// `StagedAdmission`) and a queued download's header list, each made once per download.
public enum JSONText {
    /// Appends `string` as a JSON string, quoted, escaped as `JSONSerialization` escapes it (slashes left as they
    /// are).
    public static func appendString(_ string: String, to out: inout String) {
        out += "\""
        // Most strings (identifiers, URLs, paths) need no escape: appended whole.
        if !string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out += string
            out += "\""
            return
        }
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                out += "\\u"
                let hex = String(c.value, radix: 16)
                out += String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// `strings` as a JSON array of strings.
    public static func array(_ strings: some Sequence<String>) -> String {
        var out = "["
        for (index, string) in strings.enumerated() {
            if index > 0 { out += "," }
            appendString(string, to: &out)
        }
        out += "]"
        return out
    }
}
