/// Why a transfer attempt did not produce a verified file, and what to do about it.
public struct TransferError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// Worth retrying later: a reset, a timeout, a truncated body, 408, 429 or 5xx.
        case transient
        /// The server could not be reached at all: wait for the network, then retry.
        case network
        /// Retrying cannot help: 403, 404, a size or checksum mismatch, a refused redirect, a full disk.
        case permanent
    }

    public var kind: Kind
    public var code: Int64
    public var domain: String
    public var message: String
    /// What the server asked for in `Retry-After`, when it did.
    public var retryAfter: Duration?

    public init(_ kind: Kind, code: Int64, domain: String, message: String, retryAfter: Duration? = nil) {
        self.kind = kind
        self.code = code
        self.domain = domain
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "\(domain) \(code): \(message)" }

    /// The domain of bahost's own transfer errors; an HTTP status failure uses the status as its code.
    public static let hostDomain = "BAHostErrorDomain"
    /// Apple's URL loading errors, with NSURLError codes, so that extension code that checks them works.
    public static let urlDomain = "NSURLErrorDomain"

    public static let sizeMismatch: Int64 = 1001
    public static let checksumMismatch: Int64 = 1002
    public static let insufficientSpace: Int64 = 1003
    public static let tooManyRedirects: Int64 = 1004
    public static let byteLimitExceeded: Int64 = 1005

    public static func permanent(_ code: Int64, _ message: String) -> TransferError {
        TransferError(.permanent, code: code, domain: hostDomain, message: message)
    }
}
