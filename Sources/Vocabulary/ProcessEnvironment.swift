import Glibc

/// The process's environment, read from `environ`: what Foundation's `ProcessInfo` gives, for the modules the app
/// library links, which must not carry Foundation.
public enum ProcessEnvironment {
    /// Every variable, by name (the first of a name that appears twice).
    public static var variables: [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                let name = String(text[..<equals])
                if result[name] == nil { result[name] = String(text[text.index(after: equals)...]) }
            }
            entry += 1
        }
        return result
    }

    /// One variable, or nil when it is not set.
    public static func value(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
}
