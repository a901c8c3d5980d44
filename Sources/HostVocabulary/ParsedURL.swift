import Foundation
import Synchronization

extension URLComponents {
    /// `URLComponents(string:)`, remembering the last text parsed (one, for any thread): a download's URL is parsed
    /// by its admission's checks and by its queue row one after the other, and by a transfer's check and then its
    /// request, and a large content request has many (docs/performance/DECISIONS.md #33).
    public static func parsed(_ text: String) -> URLComponents? {
        // The same bytes, not merely equal strings: Swift's `==` takes canonically equivalent Unicode as equal,
        // which two URLs that percent-encode differently can be.
        let hit = lastParsed.withLock { last in last.flatMap { sameBytes($0.text, text) ? $0 : nil } }
        if let hit { return hit.components }
        let components = URLComponents(string: text)
        lastParsed.withLock { $0 = (text, components) }
        return components
    }
}

private let lastParsed = Mutex<(text: String, components: URLComponents?)?>(nil)

/// Whether two strings hold the same UTF-8 bytes: compared whole with `memcmp`, since URLs share long prefixes and
/// the generic walk of two UTF-8 views goes byte by byte (#33).
private func sameBytes(_ first: String, _ second: String) -> Bool {
    var first = first, second = second
    return first.withUTF8 { a in
        second.withUTF8 { b in
            a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
        }
    }
}
