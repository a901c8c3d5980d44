import Vocabulary

/// Why a pack, its manifest or its archive was refused. Every message names the pack, path or limit at fault;
/// text that came from the archive is quoted with control characters escaped, never printed raw.
public enum PackError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The author's manifest, or a download manifest, breaks a rule.
    case invalidManifest(String)
    /// A file the manifest selects cannot be packed.
    case unreadableSource(String)
    /// The archive is not one `bahost pack` wrote, or is damaged.
    case corruptArchive(String)
    /// The archive holds something it must not: a path leaving the pack, a link, more bytes than declared…
    case hostileArchive(String)
    /// The disk refused a write.
    case io(String)

    public var description: String {
        switch self {
        case .invalidManifest(let message): "invalid pack manifest: \(message)"
        case .unreadableSource(let message): "cannot pack: \(message)"
        case .corruptArchive(let message): "corrupt pack archive: \(message)"
        case .hostileArchive(let message): "refused pack archive: \(message)"
        case .io(let message): message
        }
    }

    /// `text` in quotes, as `String.printable` makes it, with its own quotes escaped.
    package static func quoted(_ text: String) -> String {
        "\"" + text.printable(limit: 200).replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

/// A path inside a pack: relative, with no empty, `.` or `..` component, no control character, at most 1,024 bytes
/// (255 a component). The first component `.bapack` is the archive's own.
public struct PackPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let components: [Substring]
    public var description: String { components.joined(separator: "/") }

    public init(_ text: String, allowReserved: Bool = false) throws(PackError) {
        guard text.utf8.count <= 1024 else {
            throw .hostileArchive("the path \(PackError.quoted(text)) is longer than 1024 bytes")
        }
        guard !text.hasPrefix("/") else {
            throw .hostileArchive("the absolute path \(PackError.quoted(text)) leaves the pack")
        }
        // A trailing slash names a folder (tar writes them so).
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        let trimmed = parts.last == "" && parts.count > 1 ? parts.dropLast() : parts[...]
        for part in trimmed {
            guard part != "..", part != ".", !part.isEmpty else {
                throw .hostileArchive("the path \(PackError.quoted(text)) has a '\(part)' component")
            }
            guard part.utf8.count <= 255 else {
                throw .hostileArchive("a component of \(PackError.quoted(text)) is longer than 255 bytes")
            }
            guard !part.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw .hostileArchive("the path \(PackError.quoted(text)) holds a control character")
            }
        }
        guard allowReserved || trimmed.first != Self.reserved else {
            throw .hostileArchive("the path \(PackError.quoted(text)) is inside the archive's own \(Self.reserved)/")
        }
        components = Array(trimmed)
    }

    static let reserved: Substring = ".bapack"

    public static func < (a: PackPath, b: PackPath) -> Bool { a.description < b.description }
}
