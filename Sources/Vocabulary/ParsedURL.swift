import Foundation
import Synchronization

extension URLComponents {
    /// `URLComponents(string:)`, remembering the last text parsed (one, for any thread): a download's URL is parsed
    /// by its admission's checks and by its queue row one after the other, and by a transfer's check and then its
    /// request: each parse of a large content request's URLs showed in its profile (docs/PERFORMANCE.md).
    public static func parsed(_ text: String) -> URLComponents? {
        // The same bytes, not merely equal strings: Swift's `==` takes canonically equivalent Unicode as equal,
        // which two URLs that percent-encode differently can be.
        let hit = lastParsed.withLock { last in last.flatMap { $0.text.utf8.elementsEqual(text.utf8) ? $0 : nil } }
        if let hit { return hit.components }
        let components = URLComponents(string: text)
        lastParsed.withLock { $0 = (text, components) }
        return components
    }
}

private let lastParsed = Mutex<(text: String, components: URLComponents?)?>(nil)
