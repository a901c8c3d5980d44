import Foundation

/// A file selector's glob over pack paths: `*` and `?` and `[…]` within one path component (fnmatch's rules), and a
/// `**` component for any number of components, none included (`textures/**/*.png`).
struct Glob: Sendable {
    private let components: [String]

    init(_ pattern: String) {
        components = pattern.split(separator: "/").map(String.init)
    }

    /// Whether `path` matches, in time proportional to the pattern's components times the path's (a table of which
    /// pattern suffix matches which path suffix), so that many `**` cost no more than one.
    func matches(_ path: String) -> Bool {
        let names = path.split(separator: "/").map(String.init)
        let (p, n) = (components.count, names.count)
        // matched[i][j]: components[i...] matches names[j...].
        var matched = [[Bool]](repeating: [Bool](repeating: false, count: n + 1), count: p + 1)
        matched[p][n] = true
        for i in stride(from: p - 1, through: 0, by: -1) {
            for j in stride(from: n, through: 0, by: -1) {
                if components[i] == "**" {
                    matched[i][j] = matched[i + 1][j] || (j < n && matched[i][j + 1])
                } else {
                    matched[i][j] = j < n && fnmatch(components[i], names[j], FNM_PERIOD) == 0 && matched[i + 1][j + 1]
                }
            }
        }
        return matched[0][0]
    }
}
