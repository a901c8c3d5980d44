@_spi(Bindings) import BackgroundAssets
import CBAApp
import CBAExtension
import Synchronization

/// One `ba_app_t`: the app's connection, its callbacks' queue and its delegate.
///
/// A handle is a number, never an address: the library looks each up in `live`, so a handle used after
/// `ba_app_disconnect` (or one the app made up) fails with Apple's code 56 instead of touching freed memory.
final class AppConnection: @unchecked Sendable {  // the `var`s are guarded by `lock`
    let callbacks: CallbackQueue
    private let socketPath: String?
    private let appIdentifier: String?
    private let lock = NSLock()
    private var delegate: CDelegate?
    /// The pack manager, connected at its first use (an app without managed packs never opens it).
    private var packManager: AssetPackManager?
    private var packObserver: Task<Void, Never>?
    /// Challenge replies handed to the app; freed with the connection, so that a late second answer stays harmless.
    private var challengeReplies: [UnsafeMutablePointer<ba_challenge_reply_t>] = []

    private static let live = Mutex<(next: UInt, connections: [UInt: AppConnection])>((1, [:]))

    init(callbacks: CallbackQueue, socketPath: String?, appIdentifier: String?) {
        self.callbacks = callbacks
        self.socketPath = socketPath
        self.appIdentifier = appIdentifier
    }

    /// The connection's `AssetPackManager`.
    func packs() throws -> AssetPackManager {
        try lock.withLock {
            if let packManager { return packManager }
            let manager = try AssetPackManager.connected(socketPath: socketPath, appIdentifier: appIdentifier)
            packManager = manager
            return manager
        }
    }

    /// Replaces the packs' observer (nil: none).
    func observePacks(_ observer: PackObserver?) throws {
        let manager = try packs()
        let task = observer?.start(manager, callbacks)
        lock.withLock {
            packObserver?.cancel()
            packObserver = task
        }
    }

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
        let new = table.map { CDelegate(table: $0, connection: self) }
        lock.withLock { delegate = new }
        BADownloadManager.shared.delegate = new
    }

    func keep(_ reply: UnsafeMutablePointer<ba_challenge_reply_t>) {
        lock.withLock { challengeReplies.append(reply) }
    }

    /// Ends the connection: no callback runs afterwards, and the service offers what was waiting again.
    func close() {
        let (packs, observer) = lock.withLock { () -> (AssetPackManager?, Task<Void, Never>?) in
            delegate = nil
            defer { packObserver = nil }
            return (packManager, packObserver)
        }
        if let observer {
            // Cancelled and finished before this returns: nothing of the connection's runs after it.
            observer.cancel()
            let finished = DispatchSemaphore(value: 0)
            Task {
                await observer.value
                finished.signal()
            }
            _ = finished.wait(timeout: .now() + 2)
        }
        packs?.disconnect()
        BADownloadManager.shared.disconnect()
        callbacks.close()
        let replies = lock.withLock { () -> [UnsafeMutablePointer<ba_challenge_reply_t>] in
            defer { challengeReplies = [] }
            return challengeReplies
        }
        for reply in replies {
            ChallengeAnswer.release(reply)
        }
    }
}
