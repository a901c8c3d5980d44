import Packs

/// Valve's KeyValues text: `"key" "value"` pairs and `"key" { … }` blocks, quoted or bare tokens, `//` comments,
/// and `[$PLATFORM]` conditions (ignored). Keys compare without case, as Steam's tools do. A backslash is a
/// character, not an escape, as in Steam's build scripts (`"ContentRoot" "..\content\"`).
package struct KeyValues {
    var key: String
    var value: String?
    var items: [KeyValues] = []

    package func child(_ key: String) -> KeyValues? { children(key).first }
    package func children(_ key: String) -> [KeyValues] { items.filter { $0.key.lowercased() == key.lowercased() && $0.value == nil } }
    package func value(_ key: String) -> String? { values(key).first }
    package func values(_ key: String) -> [String] { items.filter { $0.key.lowercased() == key.lowercased() }.compactMap(\.value) }

    /// The whole text as one unnamed block.
    package static func parse(_ text: String) throws(PackError) -> KeyValues {
        var tokens = try tokenize(text)[...]
        var root = KeyValues(key: "")
        root.items = try block(&tokens, depth: 0)
        guard tokens.isEmpty else { throw .invalidManifest("the script has a '}' without its '{'") }
        return root
    }

    private enum Token: Equatable {
        case text(String), open, close
    }

    private static func block(_ tokens: inout ArraySlice<Token>, depth: Int) throws(PackError) -> [KeyValues] {
        guard depth < 32 else { throw .invalidManifest("the script nests blocks more than 32 deep") }
        var items: [KeyValues] = []
        while let token = tokens.first {
            guard case .text(let key) = token else {
                if token == .close, depth > 0 { return items }
                throw .invalidManifest("the script has a '\(token == .open ? "{" : "}")' where a key should be")
            }
            tokens.removeFirst()
            switch tokens.first {
            case .text(let value)?:
                tokens.removeFirst()
                items.append(KeyValues(key: key, value: value))
            case .open?:
                tokens.removeFirst()
                let inner = try block(&tokens, depth: depth + 1)
                guard tokens.first == .close else { throw .invalidManifest("the block \(PackError.quoted(key)) is not closed") }
                tokens.removeFirst()
                items.append(KeyValues(key: key, items: inner))
            default:
                throw .invalidManifest("the key \(PackError.quoted(key)) has no value")
            }
        }
        guard depth == 0 else { throw .invalidManifest("a block is not closed") }
        return items
    }

    private static func tokenize(_ text: String) throws(PackError) -> [Token] {
        var tokens: [Token] = []
        var characters = text.unicodeScalars[...]
        while let c = characters.first {
            switch c {
            case " ", "\t", "\n", "\r":
                characters.removeFirst()
            case "{":
                characters.removeFirst()
                tokens.append(.open)
            case "}":
                characters.removeFirst()
                tokens.append(.close)
            case "/" where characters.dropFirst().first == "/":
                while let next = characters.first, next != "\n" { characters.removeFirst() }
            case "[":
                // A condition such as [$WIN32]: it qualifies the pair before it, which is kept whatever the platform.
                while let next = characters.first, next != "]" { characters.removeFirst() }
                if !characters.isEmpty { characters.removeFirst() }
            case "\"":
                characters.removeFirst()
                var value = String.UnicodeScalarView()
                while true {
                    guard let next = characters.popFirst() else { throw .invalidManifest("the script has an unclosed quote") }
                    if next == "\"" { break }
                    value.append(next)
                }
                tokens.append(.text(String(value)))
            default:
                var value = String.UnicodeScalarView()
                while let next = characters.first, !" \t\n\r{}\"".unicodeScalars.contains(next) {
                    value.append(characters.removeFirst())
                }
                tokens.append(.text(String(value)))
            }
        }
        return tokens
    }
}
