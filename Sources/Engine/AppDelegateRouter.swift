import Queue
import Transfer
import Vocabulary

/// Where an app's completions and challenges go first: its delegate, while the app runs with one (the service's
/// connected apps). What the delegate does not handle goes to the extension, in a window.
public protocol AppDelegateRouter: Sendable {
    /// The process whose delegate gets the app's completions now; nil when the app runs with no delegate set.
    func delegateProcess(_ appIdentifier: String) -> Int32?
    /// Offers one completion to the delegate of process `pid`, which holds the completion's claim. The app's SDK
    /// removes `ticket` once the delegate's method returned, before it answers (`DeliveryClaim`).
    func offer(_ completion: QueuedDownload, ticket: String, to pid: Int32) async -> OfferResult
    /// Asks the app's delegate to answer a server's challenge; nil when no delegate answered it.
    func challenge(_ download: QueuedDownload, _ challenge: ServerChallenge, previousFailureCount: Int) async
        -> ChallengeAnswer?
}

extension AppDelegateRouter {
    /// Whether the app runs now with a delegate set.
    public func hasDelegate(_ appIdentifier: String) -> Bool { delegateProcess(appIdentifier) != nil }
}

/// How an app answered the offer of a completion.
public enum OfferResult: Sendable, Hashable {
    /// The delegate's method returned: delivered.
    case handled
    /// The delegate lacks the method: the extension gets the completion.
    case declined
    /// No answer in time, or the connection ended after the offer was sent: the delegate may still be in its method.
    case noAnswer
    /// The offer never reached the app (its connection had ended).
    case notSent
}
