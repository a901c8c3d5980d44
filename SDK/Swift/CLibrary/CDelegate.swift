@_spi(Bindings) import BackgroundAssets
import CBAApp
import CBAExtension
import Synchronization

/// The app's `ba_app_delegate_t` as a `BADownloadManagerDelegate`: each method posts the C function to the
/// connection's callback queue. A NULL function is a method the delegate does not implement: a completion or a
/// challenge then goes to the extension, as for a Swift delegate without that method.
///
/// A completion's method waits until the app's function returned (the file is deleted then, and the service told),
/// or until the app disconnects with it still waiting: it is then left unanswered, and the service offers it again.
final class CDelegate: NSObject, BADownloadManagerDelegate, @unchecked Sendable {  // the table is immutable
    private let table: ba_app_delegate_t
    /// Strong: a method the SDK's delegate queue had already begun when the app disconnected still finds the
    /// connection's callback queue (closed, so it drops the call). The cycle ends when the connection lets go of this
    /// delegate in `close()`.
    private let connection: AppConnection

    init(table: ba_app_delegate_t, connection: AppConnection) {
        self.table = table
        self.connection = connection
    }

    private var context: UnsafeMutableRawPointer? { table.context }

    func downloadDidBegin(_ download: BADownload) {
        guard let function = table.download_did_begin else { return }
        let context = context
        connection.callbacks.post { ABIDownload.with(download) { function(context, $0) } }
    }

    func downloadDidPause(_ download: BADownload) {
        guard let function = table.download_did_pause else { return }
        let context = context
        connection.callbacks.post { ABIDownload.with(download) { function(context, $0) } }
    }

    func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        guard let function = table.download_did_write else { return }
        let context = context
        connection.callbacks.post {
            ABIDownload.with(download) {
                function(context, $0, bytesWritten, totalBytesWritten, totalBytesExpectedToWrite)
            }
        }
    }

    func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let function = table.download_did_receive_challenge else {
            DelegateCall.current?.markUnhandled()
            return completionHandler(.performDefaultHandling, nil)
        }
        let reply = ChallengeAnswer.make(completionHandler)
        connection.keep(reply.pointer)
        let context = context
        let space = challenge.protectionSpace
        let count = challenge.previousFailureCount
        connection.callbacks.post(
            {
                ABIDownload.with(download) { described in
                    withCStrings(space.host, space.protocol, space.realm, space.authenticationMethod) { texts in
                        var c = ba_auth_challenge_t(
                            struct_size: UInt32(MemoryLayout<ba_auth_challenge_t>.size), host: texts[0],
                            port: Int32(space.port), protocol: texts[1], realm: texts[2],
                            authentication_method: texts[3], previous_failure_count: Int32(clamping: count))
                        function(context, described, &c, reply.pointer)
                    }
                }
            },
            finished: { outcome in
                // Dropped by a disconnect: the service is gone for this connection; answer nothing more.
                if outcome == .dropped { ChallengeAnswer.abandon(reply.pointer) }
            })
    }

    func download(_ download: BADownload, failedWithError error: any Error) {
        guard let function = table.download_failed else { return DelegateCall.markUnhandledHere() }
        let context = context
        var described = ErrorOut.make(error)
        completion { ABIDownload.with(download) { function(context, $0, &described) } }
    }

    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        guard let function = table.download_finished else { return DelegateCall.markUnhandledHere() }
        let context = context
        let path = fileURL.path
        completion { ABIDownload.with(download) { d in path.withCString { function(context, d, $0) } } }
    }

    /// Runs a completion's function and waits for it; a completion dropped by a disconnect is not the app's.
    private func completion(_ work: @escaping () -> Void) {
        if connection.callbacks.run(work) == .dropped { DelegateCall.markUnhandledHere() }
    }
}

extension DelegateCall {
    /// Marks the delegate call running on this thread unhandled.
    static func markUnhandledHere() { current?.markUnhandled() }
}

/// Calls `body` with C strings for the texts (NULL for nil), valid during the call.
func withCStrings<R>(_ texts: String?..., body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = texts.map { $0.flatMap { strdup($0) } }
    defer { copies.forEach { free($0) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}
