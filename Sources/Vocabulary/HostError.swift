import CBAExtension
import Glibc

/// An error as every layer carries it (the C ABI, the service's socket, the queue's rows, reports): Apple's
/// `BAErrorDomain` codes, `NSURLErrorDomain` codes for transfers, or bahost's own `BAHostErrorDomain`.
public struct HostError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public var code: Int64
    public var domain: String
    public var message: String

    public init(code: Int64, domain: String, message: String) {
        self.code = code
        self.domain = domain
        self.message = message
    }

    /// An error in Apple's `BAErrorDomain`.
    public init(_ code: ba_error_code_t, _ message: String) {
        self.init(code: Int64(code.rawValue), domain: BA_ERROR_DOMAIN, message: message)
    }

    /// bahost's own domain: what Apple's domains have no code for (verification, the service's own failures).
    public static let bahostDomain = "BAHostErrorDomain"

    /// An error in bahost's own domain; -1 when nothing more specific applies.
    public static func bahost(_ message: String, code: Int64 = -1) -> HostError {
        HostError(code: code, domain: bahostDomain, message: message)
    }

    /// An error in `NSPOSIXErrorDomain`: `code` is the errno value.
    public static func posix(_ code: Int32, _ message: String) -> HostError {
        HostError(code: Int64(code), domain: "NSPOSIXErrorDomain", message: message)
    }

    /// A system call that failed: `what`, then the system's words for `code` (errno by default).
    public static func system(_ what: String, _ code: Int32 = errno) -> HostError {
        posix(code, "\(what): \(String(cString: strerror(code)))")
    }

    public var description: String { "\(domain) \(code): \(message)" }
}

/// Apple's `BAManagedErrorDomain` and its `BAManagedErrorCode`s: the errors of managed asset packs.
public enum ManagedErrorCode {
    public static let domain = "BAManagedErrorDomain"
    public static let assetPackNotFound: Int64 = 0
    public static let fileNotFound: Int64 = 1
    public static let localAvailabilityFailure: Int64 = 2
}
