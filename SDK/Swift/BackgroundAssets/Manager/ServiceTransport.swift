// Over 400 lines: the app's connection, its reader and its callbacks share one state; apart, they would pass it around.
import ServiceWire
import Synchronization
import Vocabulary

/// An app's side of `BADownloadManager`: requests to the bahost service over its Unix socket, and the delegate's
/// callbacks from it.
///
/// The app's identity is `$BAHOST_APP_IDENTIFIER` (set by `bahost launch APP -- COMMAND`), else its bundle
/// identifier; the service accepts it only from a process `bahost launch` started (or one of its descendants). The
/// connection opens at the first call, or as soon as a delegate is set: that is how the service
/// learns the app runs and wants its completions. If the service goes away, calls fail with 56 and the next call
/// connects again; while a delegate is set the transport reconnects by itself, so that completions that waited
/// for the service's restart still reach the app.
final class ServiceTransport: HostTransport, Sendable {
    var isExtension: Bool { false }
    private let socketPath: String
    private let appIdentifier: String?
    private let state = Mutex(State())
    /// Where managed asset packs' status updates go (`AssetPackManager`'s transport only).
    private let assetPackEvents: (@Sendable (AssetPackInfo, WirePackUpdate) -> Void)?
    /// Delegate methods run here, one at a time and in order, off the thread that reads the socket.
    private let delegateCalls = DelegateCalls()

    private struct State {
        var connection: Connection?
        var wantsDelegate = false
        var reconnecting = false
        /// Set by `disconnect()`: this transport never connects again.
        var closed = false
        /// The descriptor holding the exclusive-control lock, while held.
        var lockDescriptor: Int32 = -1
    }

    init(
        socketPath: String = ServiceProtocol.defaultSocketPath,
        appIdentifier: String? = ProcessInfo.processInfo.environment["BAHOST_APP_IDENTIFIER"]
            ?? Bundle.main.bundleIdentifier,
        assetPackEvents: (@Sendable (AssetPackInfo, WirePackUpdate) -> Void)? = nil
    ) {
        self.socketPath = socketPath
        self.appIdentifier = appIdentifier
        self.assetPackEvents = assetPackEvents
    }

    /// Any request; a failure reply is thrown as the service's error.
    func request(_ request: ServiceRequest) throws -> ServiceReply {
        try connection().request(request)
    }

    /// Opens the connection in the background, so that events (asset packs' status updates) start to arrive.
    func connectInBackground() {
        Thread.detachNewThread { _ = try? self.connection() }
    }

    private var isClosed: Bool { state.withLock { $0.closed } }

    /// Opens the connection now, throwing what the service or the socket said.
    func connect() throws { _ = try connection() }

    /// Closes the connection for good: callbacks still waiting are not answered (the service offers them again),
    /// and nothing reconnects.
    func disconnect() {
        let connection = state.withLock { state -> Connection? in
            state.closed = true
            state.wantsDelegate = false
            defer { state.connection = nil }
            return state.connection
        }
        connection?.socket.close()
        releaseExclusiveControl()
        // The reader sees the end at once; waiting for it means no thread of this transport still runs when the
        // caller goes on (a C app that exits right after ba_app_disconnect would otherwise tear the runtime down
        // under it).
        connection?.waitUntilRead(timeout: .seconds(2))
    }

    // MARK: Calls

    func schedule(_ download: Download) throws { try expectOK(.schedule(download)) }

    func startForeground(_ download: Download) throws { try expectOK(.startForeground(download)) }

    func cancel(_ download: Download) throws { try expectOK(.cancel(download)) }

    func currentDownloads() throws -> [BADownload] {
        let reply = try currentDownloadsReply()
        do {
            return try reply.downloads().map(\.object)
        } catch {
            throw Self.invalid("the service's reply to fetchCurrentDownloads: \(error)")
        }
    }

    func currentDownloadsReply() throws -> DownloadsReply {
        guard case .downloads(let reply) = try connection().exchange(.currentDownloads) else {
            throw Self.invalid("the service answered fetchCurrentDownloads with something else")
        }
        return reply
    }

    func delegateChanged(isSet: Bool) {
        let connection = state.withLock { state -> Connection? in
            state.wantsDelegate = isSet
            return state.connection
        }
        if let connection {
            _ = try? connection.request(.setDelegate(isSet))
        } else if isSet {
            reconnectInBackground()
        }
    }

    /// The app's own app group container, as the service reports it; nil when the service cannot be reached.
    var appContainer: URL? {
        (try? connection().hello.containerPath).flatMap { $0 }.map { URL(fileURLWithPath: $0, isDirectory: true) }
    }

    /// The app group's container, as the service reports it.
    func container(forGroup group: String) -> URL? {
        guard let hello = try? connection().hello, hello.appGroupIdentifier == group, let path = hello.containerPath
        else { return nil }
        return URL(fileURLWithPath: path, isDirectory: true)
    }

    // MARK: Exclusive control

    /// The lock is a `flock` on the file the service names, which the app's extension windows take too. Each
    /// acquisition opens its own descriptor, so that two threads of the app also exclude each other.
    func acquireExclusiveControl(timeoutMilliseconds: Int64) throws {
        guard let path = try connection().hello.exclusiveControlLockPath else {
            throw Self.invalid("the service named no exclusive-control lock")
        }
        // Its folder may not exist yet: a fresh runtime folder, before any extension window has taken the lock.
        // (If it cannot be made, the open below says why.)
        mkdir((path as NSString).deletingLastPathComponent, 0o700)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw NSError(
                domain: NSPOSIXErrorDomain, code: Int(errno),
                userInfo: [NSLocalizedDescriptionKey: "cannot open the exclusive-control lock \(path)"])
        }
        let deadline = ContinuousClock.now + .milliseconds(max(0, timeoutMilliseconds))
        var pause = Duration.milliseconds(1)
        while true {
            let operation = timeoutMilliseconds < 0 ? LOCK_EX : LOCK_EX | LOCK_NB
            if flock(descriptor, operation) == 0 { break }
            let failure = errno
            if failure == EINTR { continue }
            guard failure == EWOULDBLOCK, ContinuousClock.now < deadline else {
                close(descriptor)
                if failure == EWOULDBLOCK {
                    throw NSError(
                        domain: NSPOSIXErrorDomain, code: Int(ETIMEDOUT),
                        userInfo: [NSLocalizedDescriptionKey: "exclusive control was not acquired before the date"])
                }
                throw NSError(domain: NSPOSIXErrorDomain, code: Int(failure), userInfo: nil)
            }
            Thread.sleep(forTimeInterval: pause.inSeconds)
            pause = min(pause * 2, .milliseconds(20))
        }
        state.withLock { $0.lockDescriptor = descriptor }
    }

    func releaseExclusiveControl() {
        let descriptor = state.withLock { state in
            defer { state.lockDescriptor = -1 }
            return state.lockDescriptor
        }
        if descriptor >= 0 { close(descriptor) }
    }

    // MARK: The connection

    private func expectOK(_ request: ServiceRequest) throws {
        guard case .ok = try connection().request(request) else {
            throw Self.invalid("the service answered with something unexpected")
        }
    }

    /// The live connection, opened (and introduced) when there is none.
    private func connection() throws -> Connection {
        let (live, closed) = state.withLock { ($0.connection, $0.closed) }
        if let live { return live }
        guard !closed else { throw Self.invalid("this connection to the bahost service was closed (disconnect)") }
        guard let appIdentifier else {
            throw NSError.backgroundAssets(
                .callerConnectionNotAccepted,
                "this process has no app identity: set BAHOST_APP_IDENTIFIER (bahost launch APP -- COMMAND does)")
        }
        let socket: FramedSocket
        do {
            socket = try FramedSocket.connect(to: socketPath)
        } catch {
            throw Self.invalid("the bahost service is not reachable at \(socketPath) (\(error)); start `bahost daemon`")
        }
        let connection = Connection(socket: socket, transport: self)
        connection.startReading()
        do {
            guard case .hello(let hello) = try connection.request(.hello(Hello(role: .app, appIdentifier: appIdentifier)))
            else { throw Self.invalid("the service did not answer the hello") }
            connection.hello = hello
        } catch {
            socket.close()
            throw error
        }
        let (winner, wantsDelegate) = state.withLock { state -> (Connection?, Bool) in
            if state.closed { return (nil, false) }
            if let other = state.connection { return (other, false) }
            state.connection = connection
            return (connection, state.wantsDelegate)
        }
        guard let winner else {
            socket.close()
            throw Self.invalid("this connection to the bahost service was closed (disconnect)")
        }
        if winner !== connection {
            socket.close()
            return winner
        }
        if wantsDelegate { _ = try? connection.request(.setDelegate(true)) }
        return connection
    }

    fileprivate func connectionEnded(_ connection: Connection) {
        let reconnect = state.withLock { state -> Bool in
            if state.connection === connection { state.connection = nil }
            return state.wantsDelegate
        }
        if reconnect { reconnectInBackground() }
    }

    /// Keeps trying to reach the service while the app has a delegate.
    private func reconnectInBackground() {
        let start = state.withLock { state -> Bool in
            guard !state.reconnecting else { return false }
            state.reconnecting = true
            return true
        }
        guard start else { return }
        Thread.detachNewThread {
            while self.state.withLock({ $0.wantsDelegate && $0.connection == nil }) {
                if (try? self.connection()) != nil { break }
                Thread.sleep(forTimeInterval: 0.2)
            }
            self.state.withLock { $0.reconnecting = false }
        }
    }

    // MARK: Callbacks

    fileprivate func handle(_ event: AppEvent) {
        if case .assetPack(let pack, let update) = event {
            assetPackEvents?(pack, update)
            return
        }
        delegateCalls.post {
            guard !self.isClosed, let delegate = BADownloadManager.shared.delegate else { return }
            switch event {
            case .began(let download): await delegate.downloadDidBegin(download.object)
            case .paused(let download): await delegate.downloadDidPause(download.object)
            case .progress(let download, let written, let total, let expected):
                await delegate.download(
                    download.object, didWriteBytes: written, totalBytesWritten: total,
                    totalBytesExpectedToWrite: expected)
            case .assetPack:
                break
            }
        }
    }

    fileprivate func handle(_ callback: AppCallback, id: UInt64, on connection: Connection) {
        let run = { @Sendable in
            // A callback of a transport the app closed is not answered: the service offers it again.
            guard !self.isClosed else { return }
            guard let delegate = BADownloadManager.shared.delegate else {
                connection.answer(id, CallbackReply(handled: false))
                return
            }
            let call = DelegateCall()
            switch callback {
            // Once the method returned, the completion's ticket goes (for a finished download, the file, which
            // Apple deletes then too), and only then does the answer: a service killed in between still knows the
            // completion was delivered, and never hands it to the extension as well.
            case .finished(let download, let path):
                await DelegateCall.$current.withValue(call) {
                    await delegate.download(download.object, finishedWithFileURL: URL(fileURLWithPath: path))
                }
                if !call.unhandled { unlink(path) }
                connection.answer(id, CallbackReply(handled: !call.unhandled))
            case .failed(let download, let error, let ticket):
                await DelegateCall.$current.withValue(call) {
                    await delegate.download(download.object, failedWithError: NSError(wire: error))
                }
                if !call.unhandled { unlink(ticket) }
                connection.answer(id, CallbackReply(handled: !call.unhandled))
            case .challenge(let download, let challenge):
                await DelegateCall.$current.withValue(call) {
                    await delegate.download(download.object, didReceive: challenge.object) { disposition, credential in
                        connection.answer(
                            id,
                            CallbackReply(
                                handled: !call.unhandled, disposition: disposition.rawValue, user: credential?.user,
                                password: credential?.password))
                    }
                }
            }
        }
        if case .challenge = callback { delegateCalls.postBeside(run) } else { delegateCalls.post(run) }
    }

    static func invalid(_ message: String) -> NSError { .backgroundAssets(.callerConnectionInvalid, message) }

    /// One connection to the service, read by a thread of its own.
    fileprivate final class Connection: @unchecked Sendable {  // safe: `hello` set before sharing; the rest locks
        let socket: FramedSocket
        let transport: ServiceTransport
        private let waiters = Mutex<[UInt64: Waiter]>([:])
        private let nextIdentifier = Atomic<UInt64>(1)
        private let ended = Atomic(false)
        /// Signalled when the reader thread has finished.
        private let readerFinished = DispatchSemaphore(value: 0)
        /// Set once, before the connection is shared.
        var hello = HelloReply(serviceVersion: "")

        init(socket: FramedSocket, transport: ServiceTransport) {
            self.socket = socket
            self.transport = transport
        }

        func startReading() {
            Thread.detachNewThread { self.read() }
        }

        func request(_ request: ServiceRequest) throws -> ServiceReply {
            switch try exchange(request) {
            case .reply(let reply):
                return reply
            case .downloads(let reply):
                do {
                    return .downloads(try reply.downloads())
                } catch {
                    throw ServiceTransport.invalid("the service's reply: \(error)")
                }
            }
        }

        /// Sends `request` and waits for its answer; a failure reply is thrown as the service's error.
        func exchange(_ request: ServiceRequest) throws -> Answer {
            let id = nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
            let waiter = Waiter()
            waiters.withLock { $0[id] = waiter }
            guard !ended.load(ordering: .acquiring) else {
                waiters.withLock { _ = $0.removeValue(forKey: id) }
                throw ServiceTransport.invalid("the connection to the bahost service ended")
            }
            do {
                try socket.send(try ServiceProtocol.encode(ClientMessage.request(id: id, request)))
            } catch {
                waiters.withLock { _ = $0.removeValue(forKey: id) }
                throw ServiceTransport.invalid("cannot send to the bahost service: \(error)")
            }
            guard let reply = waiter.wait() else {
                throw ServiceTransport.invalid("the connection to the bahost service ended")
            }
            if case .reply(.failure(let error)) = reply { throw NSError(wire: error) }
            return reply
        }

        func answer(_ id: UInt64, _ reply: CallbackReply) {
            guard let data = try? ServiceProtocol.encode(ClientMessage.callbackReply(id: id, reply)) else { return }
            try? socket.send(data)
        }

        private func read() {
            // No polling after a reply, unlike the service after a request: the next reply is a whole service call
            // away (a transaction, longer than the poll), so the poll only kept a core busy that the caller and
            // the service needed (docs/PERFORMANCE.md).
            while let frame = try? socket.receive() {
                // A reply of downloads is read by its caller, where it is used (`DownloadsReply`).
                if let downloads = DownloadsReply(frame: frame) {
                    waiters.withLock { $0.removeValue(forKey: downloads.id) }?.fulfil(.downloads(downloads))
                    continue
                }
                guard let message = try? ServiceProtocol.decodeServiceMessage(frame) else { break }
                switch message {
                case .reply(let id, let reply):
                    waiters.withLock { $0.removeValue(forKey: id) }?.fulfil(.reply(reply))
                case .event(let event):
                    transport.handle(event)
                case .callback(let id, let callback):
                    transport.handle(callback, id: id, on: self)
                case .progress:
                    break
                }
            }
            ended.store(true, ordering: .releasing)
            socket.close()
            for waiter in waiters.withLock({ waiters in defer { waiters = [:] }; return waiters.values }) {
                waiter.fulfil(nil)
            }
            transport.connectionEnded(self)
            readerFinished.signal()
        }

        /// Waits until the reader thread has finished (the socket must have been closed), at most `timeout`.
        func waitUntilRead(timeout: Duration) {
            if readerFinished.wait(timeout: .now() + .nanoseconds(Int(timeout.inNanoseconds))) == .success {
                readerFinished.signal()
            }
        }
    }

    /// What a request is answered with: a reply of downloads stays a frame until its caller reads it.
    fileprivate enum Answer {
        case reply(ServiceReply)
        case downloads(DownloadsReply)
    }

    /// A caller blocked until its answer arrives, or the connection ends (nil).
    private final class Waiter: @unchecked Sendable {  // safe: `reply` written before signal, read after wait
        private let semaphore = DispatchSemaphore(value: 0)
        private var reply: Answer?

        func fulfil(_ reply: Answer?) {
            self.reply = reply
            semaphore.signal()
        }

        func wait() -> Answer? {
            semaphore.wait()
            return reply
        }
    }
}

/// Tells the transport whether the delegate implemented the method it just called: the protocol's default
/// implementations mark the call unhandled, and the service then wakes the extension instead, as Apple does for an
/// app whose delegate lacks the method. A task-local, so that the default challenge handler's task sees it too.
@_spi(Bindings) public final class DelegateCall: Sendable {
    /// The delegate call running on this thread or task; a binding keeps it to decide later (a challenge answered
    /// after its callback returned, a completion its app disconnected before it ran).
    @TaskLocal public static var current: DelegateCall?
    private let marked = Atomic(false)

    var unhandled: Bool { marked.load(ordering: .acquiring) }

    static func markUnhandled() { current?.markUnhandled() }

    /// The app's delegate did not handle this call: the service offers it to the extension instead.
    public func markUnhandled() { marked.store(true, ordering: .releasing) }
}

