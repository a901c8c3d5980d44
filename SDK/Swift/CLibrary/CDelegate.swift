import AppClient
import CBAApp
import CBAExtension
import Glibc
import ServiceWire
import Vocabulary

/// The app's `ba_app_delegate_t`: each event and callback the service sends becomes the app's C function, posted to
/// the connection's callback queue. A NULL function is a method the delegate does not implement: a completion or a
/// challenge then goes to the extension, as for a Swift delegate without that method.
///
/// A completion waits until the app's function returned (the file is deleted then, and the service told), or until
/// the app disconnects with it still waiting: it is then left to the service, which offers it again.
///
/// Threads: `handle` runs on the connection's inbox thread, one at a time.
struct CDelegate: @unchecked Sendable {  // the table and its context are the app's, called on the callback thread
    let table: ba_app_delegate_t

    private var context: UnsafeMutableRawPointer? { table.context }

    func handle(_ event: AppEvent, _ callbacks: CallbackQueue) {
        let context = context
        switch event {
        case .began(let download):
            guard let function = table.download_did_begin else { return }
            callbacks.post { download.withABI { function(context, $0) } }
        case .paused(let download):
            guard let function = table.download_did_pause else { return }
            callbacks.post { download.withABI { function(context, $0) } }
        case .progress(let download, let written, let total, let expected):
            guard let function = table.download_did_write else { return }
            callbacks.post { download.withABI { function(context, $0, written, total, expected) } }
        case .assetPack:
            break
        }
    }

    func handle(_ callback: AppCallback, _ id: AppClient.CallbackID, on connection: AppConnection) {
        let context = context
        let client = connection.client
        switch callback {
        // Once the function returned, the completion's ticket goes (for a finished download, the file, which Apple
        // deletes then too), and only then does the answer: a service killed in between still knows the completion
        // was delivered, and never hands it to the extension as well.
        case .finished(let download, let path):
            guard let function = table.download_finished else {
                return client.answer(id, CallbackReply(handled: false))
            }
            let handled = connection.callbacks.run {
                download.withABI { d in path.withCString { function(context, d, $0) } }
            } == .ran
            if handled { unlink(path) }
            client.answer(id, CallbackReply(handled: handled))
        case .failed(let download, let error, let ticket):
            guard let function = table.download_failed else {
                return client.answer(id, CallbackReply(handled: false))
            }
            var described = ErrorOut.make(error)
            let handled = connection.callbacks.run { download.withABI { function(context, $0, &described) } } == .ran
            if handled { unlink(ticket) }
            client.answer(id, CallbackReply(handled: handled))
        case .challenge(let download, let challenge):
            guard let function = table.download_did_receive_challenge else {
                return client.answer(
                    id, CallbackReply(handled: false, disposition: Int(ChallengeAnswer.performDefaultHandling)))
            }
            let reply = ChallengeAnswer.make { disposition, user, password in
                client.answer(
                    id, CallbackReply(handled: true, disposition: Int(disposition), user: user, password: password))
            }
            connection.keep(reply.pointer)
            connection.callbacks.post(
                {
                    download.withABI { described in
                        withCStrings(challenge.host, challenge.scheme, challenge.realm, challenge.authenticationMethod) {
                            texts in
                            var c = ba_auth_challenge_t(
                                struct_size: UInt32(MemoryLayout<ba_auth_challenge_t>.size), host: texts[0],
                                port: Int32(clamping: challenge.port), protocol: texts[1], realm: texts[2],
                                authentication_method: texts[3],
                                previous_failure_count: Int32(clamping: challenge.previousFailureCount))
                            function(context, described, &c, reply.pointer)
                        }
                    }
                },
                finished: { outcome in
                    // Dropped by a disconnect: the service is gone for this connection; answer nothing more.
                    if outcome == .dropped { ChallengeAnswer.abandon(reply.pointer) }
                })
        }
    }
}

/// Calls `body` with C strings for the texts (NULL for nil), valid during the call.
func withCStrings<R>(_ texts: String?..., body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = texts.map { $0.flatMap { strdup($0) } }
    defer { copies.forEach { free($0) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}
