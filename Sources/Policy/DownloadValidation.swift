import CBAExtension
import Foundation
import HostVocabulary
import Vocabulary

/// The rules every download an extension returns or schedules must meet before anything else happens to it.
/// Pure: the same download, request and rules always give the same answer.
public struct DownloadRules: Sendable {
    /// The app's group; downloads for another group are refused. Nil when no Info.plist was given.
    public var appGroupIdentifier: String?
    /// Plain http is accepted for loopback hosts only, and only when this is set (local test servers).
    public var allowInsecureLoopback: Bool

    public init(appGroupIdentifier: String?, allowInsecureLoopback: Bool) {
        self.appGroupIdentifier = appGroupIdentifier
        self.allowInsecureLoopback = allowInsecureLoopback
    }
}

public enum DownloadValidation {
    /// Splits what a content request returned into what may proceed (with its URL `normalized`) and what may not, in
    /// order. Identifiers must be unique within the set: a repeated one is refused with `downloadAlreadyScheduled`
    /// (100).
    public static func validate(
        _ downloads: [Download], for request: ContentRequest, rules: DownloadRules
    ) -> (accepted: [Download], rejected: [RejectedDownload]) {
        var accepted: [Download] = []
        var rejected: [RejectedDownload] = []
        var seen = Set<String>()
        for download in downloads {
            if let error = check(download, for: request, rules: rules) {
                rejected.append(RejectedDownload(download: download, error: error))
            } else if !seen.insert(download.identifier).inserted {
                rejected.append(RejectedDownload(download: download, error: returnedTwice(download)))
            } else {
                accepted.append(normalized(download))
            }
        }
        return (accepted, rejected)
    }

    /// A download whose identifier the same content request returned before (Apple's 100).
    public static func returnedTwice(_ download: Download) -> HostError {
        HostError(BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED, "identifier '\(download.identifier)' is returned more than once")
    }

    /// Why one download may not proceed, or nil. `request` is nil for a download scheduled through the manager,
    /// which may never be essential (Apple: essential downloads are only returned for install and update).
    public static func check(_ download: Download, for request: ContentRequest?, rules: DownloadRules)
        -> HostError?
    {
        func invalid(_ message: String) -> HostError { HostError(BA_ERROR_DOWNLOAD_INVALID, message) }

        guard download.kind == .url else { return invalid("only URL downloads can be scheduled") }
        guard !download.identifier.isEmpty else { return invalid("the identifier is empty") }
        if let error = checkText(download) { return error }
        if let error = checkURL(download.url ?? "", rules: rules) { return error }
        if let group = rules.appGroupIdentifier, download.applicationGroupIdentifier != group {
            return invalid("application group '\(download.applicationGroupIdentifier)' is not the app's ('\(group)')")
        }
        if download.isEssential {
            switch request {
            case .install?, .update?:
                break
            case let other?:
                return HostError(
                    BA_ERROR_DOWNLOAD_ESSENTIAL_DOWNLOAD_NOT_PERMITTED,
                    "essential downloads are only allowed for install and update, not \(other.name)")
            case nil:
                return HostError(
                    BA_ERROR_DOWNLOAD_ESSENTIAL_DOWNLOAD_NOT_PERMITTED,
                    "essential downloads cannot be scheduled; return them for install or update, or removingEssential()")
            }
            guard download.fileSize > 0 else { return invalid("an essential download needs its exact fileSize") }
        }
        guard download.fileSize >= 0 else { return invalid("fileSize \(download.fileSize) is negative") }
        let priorities = Int64(BA_DOWNLOAD_PRIORITY_MIN)...Int64(BA_DOWNLOAD_PRIORITY_MAX)
        guard priorities.contains(download.priority) else {
            return invalid("priority \(download.priority) is outside \(priorities.lowerBound)...\(priorities.upperBound)")
        }
        if let sha = download.sha256,
            sha.utf8.count != 64 || !sha.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0 | 0x20) })
        {
            return invalid("sha256 must be 64 hex digits")
        }
        for header in download.httpHeaders {
            if let error = checkHeader(header) { return error }
        }
        return nil
    }

    /// Why a request header may not be sent: not `Name: value` with a token for a name, or a header the host keeps
    /// for itself (`RequestHeader.reservedNames`: Apple's URLSession refuses the same).
    public static func checkHeader(_ header: String) -> HostError? {
        func invalid(_ message: String) -> HostError { HostError(BA_ERROR_DOWNLOAD_INVALID, message) }
        switch RequestHeader.parse(header) {
        case .success:
            return nil
        case .failure(.notNameValue):
            return invalid("request header '\(header.printable(limit: 100))' is not 'Name: value'")
        case .failure(.invalidName(let name)):
            return invalid("request header name '\(name.printable(limit: 100))' is not an HTTP token")
        case .failure(.reserved(let name)):
            return invalid(
                "request header '\(name.printable(limit: 100))' is reserved: the host sets it (as Apple's URLSession "
                    + "does; credentials go through the server's challenge)")
        }
    }

    /// The download with its URL as it will be fetched: what Foundation's URL parsing makes of it (characters that
    /// a URL cannot hold percent-encoded, as `URL(string:)` does), without a fragment, which is never sent. Reports
    /// and events then show exactly what is requested. A URL that does not parse is left as it is (and refused).
    public static func normalized(_ download: Download) -> Download {
        // Every download a content request returns comes through here: only a URL with a byte that a URL cannot
        // hold, or a fragment, is parsed again.
        guard let text = download.url, !text.utf8.allSatisfy(isURLByte), let url = normalizedURL(text), url != text
        else { return download }
        var copy = download
        copy.url = url
        return copy
    }

    /// The bytes a URL holds as they are (RFC 3986's unreserved, reserved and `%`), the fragment's `#` excepted.
    private static func isURLByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "-._~:/?[]@!$&'()*+,;=%".utf8.contains(byte)
        }
    }

    /// `text` as it will be fetched, or nil when it does not parse.
    public static func normalizedURL(_ text: String) -> String? {
        guard var components = URLComponents(string: text) else { return nil }
        components.fragment = nil
        return components.string
    }

    /// Longest identifier (and unique identifier), URL, app group and request header the host accepts: the runner's
    /// limits (`BA_WIRE_MAX_*` in ba_wire.h), so that an app's download and an extension's meet the same ones.
    public static let maximumIdentifierBytes = 1024
    public static let maximumURLBytes = 8192
    public static let maximumGroupBytes = 255
    public static let maximumHeaderBytes = 8192

    /// Refuses a field over its limit, or holding a control character (a line break in an identifier or a URL
    /// could forge a line of the command line's output; Apple's URL parsing refuses them too).
    static func checkText(_ download: Download) -> HostError? {
        func invalid(_ message: String) -> HostError { HostError(BA_ERROR_DOWNLOAD_INVALID, message) }
        let fields: [(String, String?, Int)] = [
            ("identifier", download.identifier, maximumIdentifierBytes),
            ("unique identifier", download.uniqueIdentifier, maximumIdentifierBytes),
            ("URL", download.url, maximumURLBytes),
            ("application group identifier", download.applicationGroupIdentifier, maximumGroupBytes),
        ] + download.httpHeaders.map { ("request header", $0, maximumHeaderBytes) }
        for (name, value, limit) in fields {
            guard let value else { continue }
            guard value.utf8.count <= limit else { return invalid("the \(name) is longer than \(limit) bytes") }
            if let control = value.unicodeScalars.first(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                return invalid("the \(name) holds the control character U+\(String(format: "%04X", control.value))")
            }
        }
        return nil
    }

    /// Why `text` may not be fetched: not an absolute URL, a port no TCP port can be, credentials in it, or not
    /// https (plain http only to loopback hosts, and only when the rules allow it). Applies to every redirect hop too.
    public static func checkURL(_ text: String, rules: DownloadRules) -> HostError? {
        func invalid(_ message: String) -> HostError { HostError(BA_ERROR_DOWNLOAD_INVALID, message) }
        guard let url = URLComponents.parsed(text), let scheme = url.scheme?.lowercased(),
            let host = url.host, !host.isEmpty
        else { return invalid("'\(text.printableURL(limit: 200))' is not an absolute URL") }
        if let port = url.port, !(1...65535).contains(port) {
            return invalid("the URL of \(host.printable(limit: 100)) names port \(port); a port is 1 to 65535")
        }
        guard url.user == nil && url.password == nil else {
            return invalid(
                "the URL of \(host.printable(limit: 100)) holds credentials (user:password@): they are never sent or "
                    + "printed; answer the server's challenge instead (backgroundDownload(_:didReceive:), or the "
                    + "delegate's)")
        }
        switch scheme {
        case "https":
            return nil
        case "http" where isLoopback(host):
            return rules.allowInsecureLoopback
                ? nil
                : invalid("plain http to \(host.printable(limit: 100)) needs --allow-insecure-loopback; use https")
        default:
            return invalid(
                "'\(text.printableURL(limit: 200))' is not https (plain http is only for loopback, behind an "
                    + "explicit flag)")
        }
    }

    /// Loopback names and addresses: `localhost`, 127.0.0.0/8, ::1.
    public static func isLoopback(_ host: String) -> Bool {
        // Checked for every download an extension returns: plain comparisons, no CharacterSet.
        var host = Substring(host)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        if host == "::1" || host.utf8.count == 9 && host.lowercased() == "localhost" { return true }
        // Four decimal numbers up to 255 between dots, the first 127, none with a leading zero (which a resolver may
        // read as octal: 0127 is 87): one pass over the bytes, since splitting the text made an array for every
        // download of a content request.
        var dots = 0, value = 0, digits = 0, first = 0
        for byte in host.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard digits == 0 || value > 0 else { return false }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                guard value <= 255 else { return false }
            case UInt8(ascii: "."):
                guard digits > 0 else { return false }
                if dots == 0 { first = value }
                dots += 1
                value = 0
                digits = 0
            default:
                return false
            }
        }
        return dots == 3 && digits > 0 && first == 127
    }
}
