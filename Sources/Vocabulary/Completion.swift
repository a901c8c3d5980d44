/// A finished or failed download as its receiver gets it, whether the app's delegate or the extension (Apple's
/// `download(_:finishedWithFileURL:)` and `download(_:failedWithError:)`). Each carries its ticket: the file that
/// the receiver's SDK removes once the callback returned, which is how the host knows it was delivered.
public struct Completion: Sendable, Hashable {
    public enum Result: Sendable, Hashable {
        /// The verified file in the app's container; it is its own ticket.
        case finished(filePath: String)
        /// Why it failed; its ticket is an empty file beside where the file would be.
        case failed(HostError, ticket: String)
    }

    /// The download, its `state` Apple's public one.
    public var download: Download
    public var result: Result

    public init(download: Download, result: Result) {
        self.download = download
        self.result = result
    }

    /// The file whose removal means the callback returned.
    public var ticket: String {
        switch result {
        case .finished(let path): path
        case .failed(_, let ticket): ticket
        }
    }
}

/// How the app's delegate answered the offer of a completion.
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
