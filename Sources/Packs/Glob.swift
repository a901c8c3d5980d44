import Foundation

/// A file selector's glob over pack paths: `*` and `?` and `[…]` within one path component (fnmatch's rules), and a
/// `**` component for any number of components, none included (`textures/**/*.png`).
struct Glob: Sendable {
    private let components: [String]

    init(_ pattern: String) {
        components = pattern.split(separator: "/").map(String.init)
    }

    func matches(_ path: String) -> Bool {
        Self.match(components[...], path.split(separator: "/").map(String.init)[...])
    }

    private static func match(_ pattern: ArraySlice<String>, _ path: ArraySlice<String>) -> Bool {
        guard let first = pattern.first else { return path.isEmpty }
        if first == "**" {
            // Zero components, or one more and try again.
            return match(pattern.dropFirst(), path) || (!path.isEmpty && match(pattern, path.dropFirst()))
        }
        guard let name = path.first, fnmatch(first, name, FNM_PERIOD) == 0 else { return false }
        return match(pattern.dropFirst(), path.dropFirst())
    }
}
