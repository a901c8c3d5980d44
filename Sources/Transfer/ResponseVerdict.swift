import Foundation
import Vocabulary

/// What one HTTP response means for a transfer attempt, decided from its status and headers alone (no I/O), so
/// that every rule is testable without a server.
enum ResponseVerdict: Equatable {
    /// Follow the redirect to this absolute URL (after vetting it).
    case redirect(String)
    /// The bytes on disk no longer fit what the server has: empty the partial file and ask again. `giveUp` is the
    /// failure to report when that keeps happening.
    case restart(giveUp: TransferError)
    /// Write the body into the partial file from `start` (0: the whole file; the partial file is emptied first
    /// when it held anything). `validator` names the bytes about to be written.
    case body(start: Int64, validator: Validator)
    case fail(TransferError)

    /// Reads the response to a request for `url` sent with `offset` bytes already on disk.
    static func of(
        status: Int, headers: ResponseHeaders, url: String, offset: Int64, request: TransferRequest
    ) -> ResponseVerdict {
        switch status {
        case 301, 302, 303, 307, 308:
            guard let location = headers.first(name: "Location"),
                let next = URL(string: location, relativeTo: URL(string: url))?.absoluteString
            else {
                return .fail(TransferError(
                    .permanent, code: TransferError.redirectToNonExistentLocation, domain: TransferError.urlDomain,
                    message: "a redirect without a usable Location"))
            }
            return .redirect(next)
        case 200:
            return checkedSize(
                start: 0, headers: headers, request: request,
                validator: Validator(etag: headers.first(name: "ETag"), lastModified: headers.first(name: "Last-Modified")))
        case 206:
            return partialContent(headers: headers, offset: offset, request: request)
        case 412, 416:
            guard offset > 0 else {
                return .fail(.permanent(Int64(status), "the server answered \(status) to a request for the whole file"))
            }
            return .restart(giveUp: .permanent(Int64(status), "the server keeps answering \(status) to a resume"))
        case 401:
            var error = TransferError.permanent(401, "the server answered 401 (authentication required) for \(url)")
            error.challenge = ServerChallenge(wwwAuthenticate: headers["WWW-Authenticate"], url: url)
            return .fail(error)
        case 408, 429, 500...599:
            return .fail(TransferError(
                .transient, code: Int64(status), domain: HostError.bahostDomain,
                message: "the server answered \(status)", retryAfter: retryAfter(headers)))
        default:
            return .fail(.permanent(Int64(status), "the server answered \(status) for \(url)"))
        }
    }

    /// The 206 check: the range must start where the file ends, be of the version on disk (same strong ETag when
    /// both have one), and belong to a file of the declared size.
    private static func partialContent(headers: ResponseHeaders, offset: Int64, request: TransferRequest) -> ResponseVerdict {
        let served = headers.first(name: "ETag")
        guard let range = ContentRange(headers.first(name: "Content-Range")), range.start == offset,
            request.validator?.etag == nil || served == nil || served == request.validator?.etag
        else {
            // A range we did not ask for, or a different version of the file: start again.
            return .restart(giveUp: .permanent(206, "the server keeps answering a range that does not fit"))
        }
        if request.expectedSize > 0, let total = range.total, total != request.expectedSize {
            return .fail(.permanent(
                TransferError.sizeMismatch, "the file is \(total) bytes, not the declared \(request.expectedSize)"))
        }
        // The bytes on disk were named by the validator the request carried; keep it.
        return checkedSize(
            start: offset, headers: headers, request: request,
            validator: request.validator ?? Validator(etag: served, lastModified: headers.first(name: "Last-Modified")))
    }

    /// A body whose `Content-Length` already says the file will not have the declared size is refused up front.
    private static func checkedSize(
        start: Int64, headers: ResponseHeaders, request: TransferRequest, validator: Validator
    ) -> ResponseVerdict {
        if request.expectedSize > 0, let length = headers.first(name: "Content-Length").flatMap(Int64.init),
            start + length != request.expectedSize
        {
            return .fail(.permanent(
                TransferError.sizeMismatch,
                "the server sends \(start + length) bytes, not the declared \(request.expectedSize)"))
        }
        return .body(start: start, validator: validator)
    }

    /// The whole file's size as a body's headers announce it: a 206's `Content-Range` total, else `start` plus the
    /// `Content-Length`; nil when the server does not say.
    static func announcedSize(headers: ResponseHeaders, start: Int64) -> Int64? {
        if let range = ContentRange(headers.first(name: "Content-Range")) { return range.total }
        guard let length = headers.first(name: "Content-Length").flatMap(Int64.init), length >= 0 else { return nil }
        return start + length
    }

    /// `Retry-After` in seconds or as an HTTP date.
    static func retryAfter(_ headers: ResponseHeaders) -> Duration? {
        guard let value = headers.first(name: "Retry-After")?.trimmingCharacters(in: .whitespaces) else { return nil }
        if let seconds = Int64(value) { return .seconds(max(0, seconds)) }
        // An HTTP date is 29 printable ASCII characters. Anything else never reaches Foundation's DateFormatter,
        // which stops the process (a fatal error, not nil) on some strings that are not (found by fuzzing).
        guard value.utf8.count <= 64, value.utf8.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .milliseconds(max(0, Int64(date.timeIntervalSinceNow * 1000)))
    }
}

/// `Content-Range: bytes START-END/TOTAL` (TOTAL may be `*`).
struct ContentRange {
    var start: Int64
    var end: Int64
    var total: Int64?

    init?(_ header: String?) {
        guard let header, header.hasPrefix("bytes ") else { return nil }
        let parts = header.dropFirst(6).split(separator: "/", maxSplits: 1)
        let bounds = parts.first?.split(separator: "-", maxSplits: 1) ?? []
        guard parts.count == 2, bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]),
            start <= end
        else { return nil }
        self.start = start
        self.end = end
        total = Int64(parts[1])
    }
}
