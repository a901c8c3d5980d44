import AppClient
import CBAApp
import CBAExtension
import ServiceWire
import Synchronization
import Vocabulary

/// One `ba_app_t`: the app's client of the service (`AppClient`), its callbacks' queue and its delegate.
///
/// A handle is a number, never an address: the library looks each up in `live`, so a handle used after
/// `ba_app_disconnect` (or one the app made up) fails with Apple's code 56 instead of touching freed memory.
///
/// Threads: what the service sends is handled on `inbox`, one thread of the connection's, in the order it came (the
/// client's reader thread must never wait for the app); the app's C functions run where `callbacks` runs them.
final class AppConnection: @unchecked Sendable {  // the `var`s are guarded by `lock`
    let client: AppClient
    let callbacks: CallbackQueue
    private let inbox = SerialThread()
    private let lock = Mutex(())
    private var delegate: CDelegate?
    private var packObserver: PackObserver?
    /// The packs the server offered at the last look, by ID: an update names a pack by its ID and version, and
    /// the app's observer is handed the pack with its `userInfo`.
    private var knownPacks: [String: AssetPackInfo] = [:]
    /// Challenge replies handed to the app; freed with the connection, so that a late second answer stays harmless.
    private var challengeReplies: [UnsafeMutablePointer<ba_challenge_reply_t>] = []

    private static let live = Mutex<(next: UInt, connections: [UInt: AppConnection])>((1, [:]))

    init(callbacks: CallbackQueue, socketPath: String?, appIdentifier: String?) {
        self.callbacks = callbacks
        client = AppClient(socketPath: socketPath, appIdentifier: appIdentifier)
        // Weakly: the client holds its handlers, and the connection holds the client.
        client.setHandlers(AppClient.Handlers(
            event: { [weak self] event in
                guard let self else { return }
                inbox.async { self.handle(event) }
            },
            callback: { [weak self] callback, id in
                guard let self else { return }
                inbox.async { self.handle(callback, id) }
            }))
    }

    /// A connection that never connected (or was closed) ends its inbox's thread.
    deinit { inbox.stop() }

    /// The connection behind a handle, if it is live.
    static func find(_ handle: OpaquePointer?) -> AppConnection? {
        guard let handle else { return nil }
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(handle)))
        return live.withLock { $0.connections[key] }
    }

    /// Registers the process's only connection; nil while another is live.
    static func register(_ connection: AppConnection) -> OpaquePointer? {
        live.withLock { live in
            guard live.connections.isEmpty else { return nil }
            let key = live.next
            live.next += 1
            live.connections[key] = connection
            return OpaquePointer(bitPattern: key)
        }
    }

    static func unregister(_ handle: OpaquePointer?) -> AppConnection? {
        guard let handle else { return nil }
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(handle)))
        return live.withLock { $0.connections.removeValue(forKey: key) }
    }

    func setDelegate(_ table: ba_app_delegate_t?) {
        let new = table.map(CDelegate.init)
        lock.withLock { _ in delegate = new }
        client.delegateChanged(isSet: new != nil)
    }

    /// Replaces the packs' observer (nil: none); the connection's updates start to arrive.
    func observePacks(_ observer: PackObserver?) {
        lock.withLock { _ in packObserver = observer }
        if observer != nil { client.connectInBackground() }
    }

    /// The packs the server offers, remembered for the observer's updates.
    func catalogue() throws(HostError) -> (packs: [AssetPackInfo], primary: String?, resolved: String?) {
        let catalogue = try client.assetPackCatalogue()
        lock.withLock { _ in for pack in catalogue.packs { knownPacks[pack.id] = pack } }
        return catalogue
    }

    func keep(_ reply: UnsafeMutablePointer<ba_challenge_reply_t>) {
        lock.withLock { _ in challengeReplies.append(reply) }
    }

    /// Ends the connection: no callback runs afterwards, and the service offers what was waiting again.
    func close() {
        lock.withLock { _ in
            delegate = nil
            packObserver = nil
        }
        client.disconnect()
        callbacks.close()
        // What the inbox still held found the callbacks closed: each was dropped, none answered. From inside a
        // callback (which ba/app.h forbids) the inbox may be waiting for that very callback: it is not waited for.
        if !CallbackQueue.insideCallback { inbox.sync() }
        inbox.stop()
        let replies = lock.withLock { _ -> [UnsafeMutablePointer<ba_challenge_reply_t>] in
            defer { challengeReplies = [] }
            return challengeReplies
        }
        for reply in replies {
            ChallengeAnswer.release(reply)
        }
    }

    // MARK: What the service sends [inbox]

    private func handle(_ event: AppEvent) {
        if case .assetPack(let wire, let update) = event {
            let (observer, pack) = lock.withLock { _ in
                let known = knownPacks[wire.id]
                // A pack the app has not looked at, or of another version: as the update names it.
                let pack = known.map { wire.version == 0 || $0.version == wire.version ? $0 : wire } ?? wire
                return (packObserver, pack)
            }
            observer?.post(pack, update, to: callbacks)
            return
        }
        guard !client.isClosed, let delegate = lock.withLock({ _ in delegate }) else { return }
        delegate.handle(event, callbacks)
    }

    private func handle(_ callback: AppCallback, _ id: AppClient.CallbackID) {
        // A callback of a connection the app closed is not answered: the service offers it again.
        guard !client.isClosed else { return }
        guard let delegate = lock.withLock({ _ in delegate }) else {
            return client.answer(id, CallbackReply(handled: false))
        }
        delegate.handle(callback, id, on: self)
    }
}
