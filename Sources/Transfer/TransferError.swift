import Foundation
import HostVocabulary
import Vocabulary

/// Why a transfer attempt did not produce a verified file (the `error` that the app or extension will see), and what
/// the engine should do about it (`kind`).
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
    /// What the download's completion reports.
    public var error: HostError
    /// What the server asked for in `Retry-After`, when it did.
    public var retryAfter: Duration?
    /// A 401 that named a scheme the host can answer: ask the app for credentials and try again.
    public var challenge: ServerChallenge?
    /// The machine had no path to the server (`.network` only): no route, the link down, the path changed under the
    /// connection, a name unresolved with no route out, a connection never answered. Waiting for the network then
    /// consumes no attempt (docs/DOWNLOADS.md, "Offline").
    public var offline = false
    /// The host stopped the transfer, or did not start it, for what the machine says of its network (a metered
    /// connection, no connectivity, sleep): the download waits for that to change, consuming no attempt.
    public var held: NetworkConditions.Hold?
    /// The host stopped the attempt because the path to its server changed (it was connecting, or stalled, on the
    /// old one): the download goes again at once on the new path, consuming no attempt, foreground ones too.
    public var restarts = false
    /// Not started, or stopped, because the volume would fall below the person's storage floor: a discretionary
    /// download waits for space, consuming no attempt, and is tried again later.
    public var waitsForSpace = false

    public init(
        _ kind: Kind, code: Int64, domain: String, message: String, retryAfter: Duration? = nil, offline: Bool = false
    ) {
        self.kind = kind
        error = HostError(code: code, domain: domain, message: message)
        self.retryAfter = retryAfter
        self.offline = offline && kind == .network
    }

    /// A refusal from another layer (a policy check on a redirect hop) met during a transfer: retrying cannot help.
    public init(refusal: HostError) {
        kind = .permanent
        error = refusal
    }

    /// The attempt was stopped by the host: a cancel, a shutdown.
    public static var cancelled: TransferError {
        TransferError(.transient, code: CurlFailure.cancelled, domain: urlDomain, message: "the transfer was cancelled")
    }

    public var code: Int64 { error.code }
    /// The attempt was stopped by the host (a cancel, a shutdown), not ended by the server or the network.
    public var isCancellation: Bool { error.domain == Self.urlDomain && error.code == CurlFailure.cancelled }
    public var message: String { error.message }
    public var description: String { error.description }

    /// The domain of bahost's own transfer errors; an HTTP status failure uses the status as its code.
    /// Apple's URL loading errors, with NSURLError codes, so that extension code that checks them works.
    public static let urlDomain = "NSURLErrorDomain"

    public static let sizeMismatch: Int64 = 1001
    public static let checksumMismatch: Int64 = 1002
    public static let insufficientSpace: Int64 = 1003
    public static let byteLimitExceeded: Int64 = 1005
    /// URLSession's codes for redirects (`urlDomain`): more than the client follows, and one that names nowhere.
    public static let tooManyRedirects: Int64 = -1007
    public static let redirectToNonExistentLocation: Int64 = -1010

    /// A transfer stopped for `hold`: URLSession's "not connected to the internet", which Apple reports with the
    /// reason (expensive, constrained) when a request's network access rules out the network there is.
    public static func held(_ hold: NetworkConditions.Hold) -> TransferError {
        var error = TransferError(
            .network, code: CurlFailure.notConnectedToInternet, domain: urlDomain, message: "paused: \(hold)")
        error.held = hold
        return error
    }

    /// An attempt stopped for a change of the path to its server, to start again at once on the new one.
    public static func restart(_ message: String) -> TransferError {
        var error = TransferError(
            .network, code: CurlFailure.networkConnectionLost, domain: urlDomain, message: message)
        error.restarts = true
        return error
    }

    /// Too little space on the volume for a discretionary download: it waits, consuming no attempt.
    public static func waitForSpace(_ message: String) -> TransferError {
        var error = TransferError(.transient, code: insufficientSpace, domain: HostError.bahostDomain, message: message)
        error.waitsForSpace = true
        return error
    }

    public static func permanent(_ code: Int64, _ message: String) -> TransferError {
        TransferError(.permanent, code: code, domain: HostError.bahostDomain, message: message)
    }
}

/// A server's `401` with `WWW-Authenticate: Basic`: what Apple calls the challenge's protection space.
public struct ServerChallenge: Sendable, Hashable {
    public var host: String
    public var port: Int
    /// `http` or `https`.
    public var scheme: String
    public var realm: String?

    public init(host: String, port: Int, scheme: String, realm: String?) {
        self.host = host
        self.port = port
        self.scheme = scheme
        self.realm = realm
    }

    /// The challenge as the app's delegate and the extension receive it (Apple's URLAuthenticationChallenge).
    public func described(previousFailureCount: Int) -> AuthenticationChallenge {
        AuthenticationChallenge(
            host: host, port: port, scheme: scheme, realm: realm,
            authenticationMethod: "NSURLAuthenticationMethodHTTPBasic", previousFailureCount: previousFailureCount)
    }

    /// The Basic challenge in a `WWW-Authenticate` value for `url`, or nil when it offers no Basic scheme.
    init?(wwwAuthenticate values: [String], url: String) {
        guard let components = URLComponents(string: url), let host = components.host,
            let basic = values.first(where: { $0.lowercased().hasPrefix("basic") })
        else { return nil }
        self.host = host
        scheme = components.scheme ?? "https"
        port = components.port ?? (scheme == "http" ? 80 : 443)
        realm = basic.range(of: #"realm="([^"]*)""#, options: .regularExpression).map {
            String(basic[$0].dropFirst(7).dropLast())
        }
    }
}

/// Credentials the app gave for a challenge; sent only to the host that asked.
public struct Credential: Sendable, Hashable {
    public var host: String
    public var user: String
    public var password: String

    public init(host: String, user: String, password: String) {
        self.host = host
        self.user = user
        self.password = password
    }
}
