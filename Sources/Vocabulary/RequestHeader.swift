/// One `Name: value` request header of a download, as an extension or an app wrote it.
///
/// Which headers another party may set follows Apple's URLSession, which keeps the "reserved" ones for itself
/// (`Connection`, `Content-Length`, `Host`, `Proxy-Authenticate`, `Proxy-Authorization`, `WWW-Authenticate`), plus
/// the ones bahost itself writes to frame, resume and verify a transfer. A `Host` header in particular would send a
/// request to an allowed address as a request for a virtual host the allow list never approved.
///
/// `Authorization` is on Apple's list too, but URLSession sends a caller's own in practice and apps rely on it (a
/// bearer token for their CDN), so it stays settable; like URLSession, the host sends it, and `Cookie`, only to the
/// download's own origin, never across a redirect to another (`isOriginBound`).
public struct RequestHeader: Sendable, Hashable {
    public var name: String
    public var value: String

    /// Headers nobody but the host sets, lowercased.
    public static let reservedNames: Set<String> = [
        // Apple's reserved headers but Authorization (above).
        "connection", "content-length", "host", "proxy-authenticate", "proxy-authorization", "www-authenticate",
        // The message's framing and the connection's: the HTTP client writes them, or must not see them.
        "transfer-encoding", "te", "trailer", "upgrade", "keep-alive", "proxy-connection", "expect",
        // What bahost writes to resume and to verify the bytes it receives.
        "range", "if-range", "accept-encoding",
    ]

    /// Whether the header carries credentials that only the download's own origin may see.
    public var isOriginBound: Bool { ["authorization", "cookie"].contains(name.lowercased()) }

    /// The header in `line`, or why it is not one: `Name: value`, the name an HTTP token (RFC 9110), not reserved.
    public static func parse(_ line: String) -> Result<RequestHeader, HeaderProblem> {
        guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { return .failure(.notNameValue) }
        let name = String(line[..<colon])
        guard name.utf8.allSatisfy(isTokenByte) else { return .failure(.invalidName(name)) }
        let value = line[line.index(after: colon)...].trimmingWhitespace()
        guard !reservedNames.contains(name.lowercased()) else { return .failure(.reserved(name)) }
        return .success(RequestHeader(name: name, value: value))
    }

    /// Why a line is not a header another party may set.
    public enum HeaderProblem: Error, Sendable, Hashable {
        case notNameValue
        case invalidName(String)
        case reserved(String)
    }

    /// `tchar` of RFC 9110: letters, digits and ``!#$%&'*+-.^_`|~``.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

extension Substring {
    fileprivate func trimmingWhitespace() -> String {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return String(text)
    }
}
