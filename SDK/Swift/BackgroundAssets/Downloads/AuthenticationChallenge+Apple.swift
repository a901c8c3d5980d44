import Foundation
import Vocabulary

extension AuthenticationChallenge {
    /// Apple's challenge object, for an app's delegate or an extension. Replies go through the method's answer, not
    /// the sender.
    var object: URLAuthenticationChallenge {
        let space = URLProtectionSpace(
            host: host, port: port, protocol: scheme, realm: realm, authenticationMethod: authenticationMethod)
        return URLAuthenticationChallenge(
            protectionSpace: space, proposedCredential: nil, previousFailureCount: previousFailureCount,
            failureResponse: nil, error: nil, sender: IgnoredChallengeSender())
    }
}

private final class IgnoredChallengeSender: NSObject, URLAuthenticationChallengeSender {
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
    func cancel(_ challenge: URLAuthenticationChallenge) {}
    func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
}
