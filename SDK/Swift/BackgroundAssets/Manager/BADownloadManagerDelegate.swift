/// Receives the events of downloads scheduled by the app or its extension (Apple's `BADownloadManagerDelegate`).
/// Every method is optional: the defaults do nothing, and a completion or challenge the app's delegate does not
/// implement wakes the extension instead.
///
/// Implement the methods as Apple declares them, synchronous. The requirements are `async` so that a delegate
/// isolated to the main actor (a `@MainActor` controller) conforms in Swift 6 mode, as against Apple's SDK, which
/// imports the protocol from Objective-C: its methods then run on the main actor. A nonisolated delegate's methods
/// run on a thread of the manager's, one at a time, in order.
public protocol BADownloadManagerDelegate: NSObjectProtocol {
    /// A download started, or resumed after a pause.
    func downloadDidBegin(_ download: BADownload) async
    /// A download paused.
    func downloadDidPause(_ download: BADownload) async
    /// A download made progress.
    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64) async
    /// A server asked for credentials. Implement this or the async form.
    func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) async
    /// A server asked for credentials. Implement this or the completion-handler form.
    func download(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    /// A download failed.
    func download(_ download: BADownload, failedWithError error: any Error) async
    /// A download finished. Move the file before returning, or it is deleted.
    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) async
}

extension BADownloadManagerDelegate {
    public func downloadDidBegin(_ download: BADownload) async {}
    public func downloadDidPause(_ download: BADownload) async {}
    public func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) async {}
    public func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) async {
        let (disposition, credential) = await self.download(download, didReceive: challenge)
        completionHandler(disposition, credential)
    }
    public func download(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        DelegateCall.markUnhandled()
        return (.performDefaultHandling, nil)
    }
    public func download(_ download: BADownload, failedWithError error: any Error) async { DelegateCall.markUnhandled() }
    public func download(_ download: BADownload, finishedWithFileURL fileURL: URL) async {
        DelegateCall.markUnhandled()
    }
}
