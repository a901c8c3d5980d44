@_spi(Bindings) import BackgroundAssets
import CBAExtension
import Synchronization

/// A `ba_challenge_reply_t` the app answers once, from any thread, now or later. The struct lives until the
/// connection closes (a second answer finds it and is ignored); its `reply_data` is this box.
final class ChallengeAnswer: Sendable {
    private let handler: Mutex<(@Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)?>

    private init(_ handler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        self.handler = Mutex(handler)
    }

    /// Credentials longer than this are refused as the extension's side refuses them.
    static let maximumCredentialBytes = 4096

    /// A reply struct, carried between threads: the library frees it only when the connection closes.
    struct Reply: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<ba_challenge_reply_t>
    }

    static func make(
        _ handler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) -> Reply {
        let reply = UnsafeMutablePointer<ba_challenge_reply_t>.allocate(capacity: 1)
        reply.initialize(
            to: ba_challenge_reply_t(
                struct_size: UInt32(MemoryLayout<ba_challenge_reply_t>.size),
                reply_data: Unmanaged.passRetained(ChallengeAnswer(handler)).toOpaque(),
                complete: { reply, disposition, user, password in
                    guard let reply, let data = reply.pointee.reply_data else { return }
                    Unmanaged<ChallengeAnswer>.fromOpaque(data).takeUnretainedValue()
                        .answer(disposition, user, password)
                }))
        return Reply(pointer: reply)
    }

    private func answer(_ disposition: Int32, _ user: UnsafePointer<CChar>?, _ password: UnsafePointer<CChar>?) {
        guard let handler = handler.withLock({ handler in defer { handler = nil }; return handler }) else { return }
        var choice = URLSession.AuthChallengeDisposition(rawValue: Int(disposition)) ?? .cancelAuthenticationChallenge
        var credential: URLCredential?
        if choice == .useCredential {
            let user = user.flatMap { Self.bounded($0) }
            let password = password.flatMap { Self.bounded($0) }
            if let user, let password {
                credential = URLCredential(user: user, password: password, persistence: .none)
            } else {
                choice = .cancelAuthenticationChallenge
            }
        }
        handler(choice, credential)
    }

    /// The text, if it ends within the bound (never read further).
    private static func bounded(_ text: UnsafePointer<CChar>) -> String? {
        let length = strnlen(text, maximumCredentialBytes + 1)
        guard length <= maximumCredentialBytes else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
    }

    /// The connection closed before the app saw the challenge: nobody answers it.
    static func abandon(_ reply: UnsafeMutablePointer<ba_challenge_reply_t>) {
        guard let data = reply.pointee.reply_data else { return }
        Unmanaged<ChallengeAnswer>.fromOpaque(data).takeUnretainedValue().handler.withLock { $0 = nil }
    }

    /// Frees the struct and its box (the connection closed).
    static func release(_ reply: UnsafeMutablePointer<ba_challenge_reply_t>) {
        if let data = reply.pointee.reply_data { Unmanaged<ChallengeAnswer>.fromOpaque(data).release() }
        reply.deinitialize(count: 1)
        reply.deallocate()
    }
}
