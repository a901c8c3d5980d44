import Queue
import Transfer

/// Where an app's completions and challenges go first: its delegate, while the app runs with one (the service's
/// connected apps). What the delegate does not handle goes to the extension, in a window.
public protocol AppDelegateRouter: Sendable {
    /// Whether the app runs now with a delegate set.
    func hasDelegate(_ appIdentifier: String) -> Bool
    /// Offers one completion to the app's delegate; true when the delegate handled it, which delivers it.
    func offer(_ completion: QueuedDownload) async -> Bool
    /// Asks the app's delegate to answer a server's challenge; nil when no delegate answered it.
    func challenge(_ download: QueuedDownload, _ challenge: ServerChallenge, previousFailureCount: Int) async
        -> ChallengeAnswer?
}

/// Apple's `URLSession.AuthChallengeDisposition`, with the credential it may carry.
public enum ChallengeAnswer: Sendable, Hashable {
    case useCredential(user: String, password: String)
    case performDefaultHandling
    case cancelAuthenticationChallenge
    case rejectProtectionSpace
}
