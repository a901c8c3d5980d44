/// A server's request for credentials, as an app's delegate or an extension sees it (Apple's
/// `URLAuthenticationChallenge`, with its protection space).
public struct AuthenticationChallenge: Codable, Sendable, Hashable {
    public var host: String
    public var port: Int
    /// `http` or `https`.
    public var scheme: String
    public var realm: String?
    /// `NSURLAuthenticationMethodHTTPBasic` and the like.
    public var authenticationMethod: String
    public var previousFailureCount: Int

    public init(
        host: String, port: Int, scheme: String, realm: String?, authenticationMethod: String, previousFailureCount: Int
    ) {
        self.host = host
        self.port = port
        self.scheme = scheme
        self.realm = realm
        self.authenticationMethod = authenticationMethod
        self.previousFailureCount = previousFailureCount
    }
}

/// The answer to a challenge: Apple's `URLSession.AuthChallengeDisposition`, with the credential it may carry.
public enum ChallengeAnswer: Sendable, Hashable {
    case useCredential(user: String, password: String)
    case performDefaultHandling
    case cancelAuthenticationChallenge
    case rejectProtectionSpace

    /// The answer for a disposition's raw value (and the credential that `useCredential` carries); nil for a value
    /// Apple does not define.
    public init?(disposition: Int, user: String?, password: String?) {
        switch disposition {
        case 0: self = .useCredential(user: user ?? "", password: password ?? "")
        case 1: self = .performDefaultHandling
        case 2: self = .cancelAuthenticationChallenge
        case 3: self = .rejectProtectionSpace
        default: return nil
        }
    }
}
