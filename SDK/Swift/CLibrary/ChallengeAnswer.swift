import CBAExtension
import Glibc
import Synchronization

/// A `ba_challenge_reply_t` the app answers once, from any thread, now or later. The struct lives until the
/// connection closes (a second answer finds it and is ignored); its `reply_data` is this box.
final class ChallengeAnswer: Sendable {
    /// What the app answered: Apple's `URLSession.AuthChallengeDisposition` raw value, and the credential with
    /// `useCredential`.
    typealias Handler = @Sendable (_ disposition: Int32, _ user: String?, _ password: String?) -> Void

    /// Apple's `URLSession.AuthChallengeDisposition` raw values.
    static let useCredential: Int32 = 0
    static let performDefaultHandling: Int32 = 1
    static let cancelAuthenticationChallenge: Int32 = 2
    static let rejectProtectionSpace: Int32 = 3

    private let handler: Mutex<Handler?>

    private init(_ handler: @escaping Handler) {
        self.handler = Mutex(handler)
    }

    /// Credentials longer than this are refused as the extension's side refuses them.
    static let maximumCredentialBytes = 4096

    /// A reply struct, carried between threads: the library frees it only when the connection closes.
    struct Reply: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<ba_challenge_reply_t>
    }

    static func make(_ handler: @escaping Handler) -> Reply {
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
        guard (Self.useCredential...Self.rejectProtectionSpace).contains(disposition) else {
            return handler(Self.cancelAuthenticationChallenge, nil, nil)
        }
        guard disposition == Self.useCredential else { return handler(disposition, nil, nil) }
        guard let user = user.flatMap({ Self.bounded($0) }), let password = password.flatMap({ Self.bounded($0) }) else {
            return handler(Self.cancelAuthenticationChallenge, nil, nil)
        }
        handler(disposition, user, password)
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
