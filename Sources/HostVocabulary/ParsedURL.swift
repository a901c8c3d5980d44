import Foundation
import Synchronization

extension URLComponents {
    /// `URLComponents(string:)`, remembering the last text parsed (one, for any thread): a download's URL is parsed
    /// by its admission's checks and by its queue row one after the other, and by a transfer's check and then its
    /// request: each parse of a large content request's URLs showed in its profile (docs/PERFORMANCE.md).
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

/// Whether two strings hold the same UTF-8 bytes: compared whole with `memcmp` (the generic walk of two UTF-8 views,
/// byte by byte, showed in the profile of a content request, whose URLs share long prefixes).
private func sameBytes(_ first: String, _ second: String) -> Bool {
    var first = first, second = second
    return first.withUTF8 { a in
        second.withUTF8 { b in
            a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
        }
    }
}
