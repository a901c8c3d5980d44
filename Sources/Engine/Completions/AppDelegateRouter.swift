import Vocabulary

/// Where an app's completions and challenges go first: its delegate, while the app runs with one (the service's
/// connected apps). What the delegate does not handle goes to the extension, in a window.
public protocol AppDelegateRouter: Sendable {
    /// The process whose delegate gets the app's completions now; nil when the app runs with no delegate set.
    func delegateProcess(_ appIdentifier: String) -> Int32?
    /// Offers one completion to the delegate of process `pid`, which holds the completion's claim. The app's SDK
    /// removes the completion's ticket once the delegate's method returned, before it answers (`DeliveryClaim`).
    func offer(_ completion: Completion, of appIdentifier: String, to pid: Int32) async -> OfferResult
    /// Asks the app's delegate to answer a server's challenge for `download`; nil when no delegate answered it.
    func challenge(_ download: Download, of appIdentifier: String, _ challenge: AuthenticationChallenge) async
        -> ChallengeAnswer?
}

extension AppDelegateRouter {
    /// Whether the app runs now with a delegate set.
    public func hasDelegate(_ appIdentifier: String) -> Bool { delegateProcess(appIdentifier) != nil }
}
