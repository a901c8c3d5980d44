/// Receives the events of downloads scheduled by the app or its extension (Apple's `BADownloadManagerDelegate`).
/// Every method is optional: the defaults do nothing, and a completion or challenge the app's delegate does not
/// implement wakes the extension instead.
public protocol BADownloadManagerDelegate: NSObjectProtocol {
    /// A download started, or resumed after a pause.
    func downloadDidBegin(_ download: BADownload)
    /// A download paused.
    func downloadDidPause(_ download: BADownload)
    /// A download made progress.
    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64)
    /// A server asked for credentials. Implement this or the async form.
    func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
    /// A server asked for credentials. Implement this or the completion-handler form.
    func download(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    /// A download failed.
    func download(_ download: BADownload, failedWithError error: any Error)
    /// A download finished. Move the file before returning, or it is deleted.
    func download(_ download: BADownload, finishedWithFileURL fileURL: URL)
}

extension BADownloadManagerDelegate {
    public func downloadDidBegin(_ download: BADownload) {}
    public func downloadDidPause(_ download: BADownload) {}
    public func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {}
    public func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let delegate = UncheckedDelegate(delegate: self)
        Task {
            let (disposition, credential) = await delegate.delegate.download(download, didReceive: challenge)
            completionHandler(disposition, credential)
        }
    }
    public func download(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        DelegateCall.markUnhandled()
        return (.performDefaultHandling, nil)
    }
    public func download(_ download: BADownload, failedWithError error: any Error) { DelegateCall.markUnhandled() }
    public func download(_ download: BADownload, finishedWithFileURL fileURL: URL) { DelegateCall.markUnhandled() }
}

/// Delegates are app objects the manager calls from its own threads, as Apple's does.
private struct UncheckedDelegate: @unchecked Sendable {
    let delegate: any BADownloadManagerDelegate
}
