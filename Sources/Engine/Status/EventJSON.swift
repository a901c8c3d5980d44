import Foundation
import Vocabulary

/// Writes an event's JSON object as one line of text: keys sorted, slashes unescaped, as `JSONSerialization` with
/// `.sortedKeys` and `.withoutEscapingSlashes` writes it.
///
/// Hand-written because every queued, began, progress and finished event becomes a line (for `--json`, and for the
/// `bahost install` that follows an app), and `JSONSerialization` cost more than the rest of admitting a download:
/// a content request returning 100,000 spent most of its time here (Benchmarks). The values events hold are few:
/// strings, integers, doubles, booleans, arrays and objects of them.
public enum EventJSON {
    public static func line(_ object: [String: Any]) -> String {
        var out = ""
        out.reserveCapacity(256)
        write(object, to: &out)
        return out
    }

    static func write(_ value: Any, to out: inout String) {
        switch value {
        case let string as String: JSONText.appendString(string, to: &out)
        case let bool as Bool: out += bool ? "true" : "false"
        case let int as Int: out += String(int)
        case let int as Int64: out += String(int)
        case let int as Int32: out += String(int)
        case let int as UInt64: out += String(int)
        case let double as Double: writeDouble(double, to: &out)
        case let object as [String: Any]:
            out += "{"
            for (index, key) in object.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                JSONText.appendString(key, to: &out)
                out += ":"
                write(object[key]!, to: &out)
            }
            out += "}"
        case let array as [Any]:
            out += "["
            for (index, element) in array.enumerated() {
                if index > 0 { out += "," }
                write(element, to: &out)
            }
            out += "]"
        default:
            JSONText.appendString(String(describing: value), to: &out)
        }
    }

    private static func writeDouble(_ value: Double, to out: inout String) {
        guard value.isFinite else {
            out += "null"
            return
        }
        if value == value.rounded(), abs(value) < 1e15 {
            out += String(Int64(value))
        } else {
            out += String(value)
        }
    }
}
