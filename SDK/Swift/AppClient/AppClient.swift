// Over 300 lines: the app's connection, its reader and its callbacks share one state; apart, they would pass it around.
import CBAExtension
import Glibc
import ServiceWire
import Synchronization
import Vocabulary

/// An app's side of the bahost service's protocol, once for every binding: requests over the service's Unix socket,
/// and the events and callbacks the service sends. The Swift SDK's `BADownloadManager` and `AssetPackManager` put
/// Apple's types on it; the C library (`ba/app.h`) calls it. It uses no Foundation, so that the app library does not
/// carry Foundation (docs/performance/DECISIONS.md #46). Errors are `HostError`s in
/// Apple's domains.
///
/// The app's identity is the one given, else `$BAHOST_APP_IDENTIFIER` (set by `bahost launch APP -- COMMAND`), else,
/// inside a Flatpak, its application ID; the service accepts it only from a process `bahost launch` started (or one
/// of its descendants), or from inside that app's Flatpak sandbox. The connection opens
/// at the first call, or as soon as a delegate is wanted: that is how the service learns the app runs and wants its
/// completions. If the service goes away, calls fail with 56 and the next call connects again; while a delegate is
/// wanted the client reconnects by itself, so that completions that waited for the service's restart still arrive.
///
/// Threads: every method may be called from any thread. Events and callbacks are handed to `handlers` on the
/// connection's reader thread, in the order they came; a handler returns at once and answers a callback later,
/// from any thread, with `answer`.
public final class AppClient: Sendable {
    /// What the service sends the app, handed over as it arrives.
    public struct Handlers: Sendable {
        public var event: @Sendable (AppEvent) -> Void
        /// A callback to answer with `AppClient.answer(_:_:)` (on the connection it came on, under its id).
        public var callback: @Sendable (AppCallback, CallbackID) -> Void

        public init(
            event: @escaping @Sendable (AppEvent) -> Void = { _ in },
            callback: @escaping @Sendable (AppCallback, CallbackID) -> Void = { _, _ in }
        ) {
            self.event = event
            self.callback = callback
        }
    }

    /// A callback's identity: its id on the connection it came on (an answer on a later connection would be
    /// another callback's).
    public struct CallbackID: Sendable {
        fileprivate let id: UInt64
        fileprivate let connection: Connection
    }

    public let socketPath: String
    private let appIdentifier: String?
    private let handlers: Mutex<Handlers>
    private let state = Mutex(State())

    private struct State {
        var connection: Connection?
        var wantsDelegate = false
        var reconnecting = false
        /// Set by `disconnect()`: this client never connects again.
        var closed = false
        /// The descriptor holding the exclusive-control lock, while held.
        var lockDescriptor: Int32 = -1
        /// What the app last said with `setPlaying`, said again on a new connection.
        var playing = false
    }

    /// A client of the service at `socketPath` (nil: `ServiceProtocol.appSocketPath`, which finds the service from
    /// inside a Flatpak too) as `appIdentifier` (nil: `$BAHOST_APP_IDENTIFIER`, else the Flatpak's application ID).
    public init(socketPath: String? = nil, appIdentifier: String? = nil, handlers: Handlers = Handlers()) {
        self.socketPath = socketPath ?? ServiceProtocol.appSocketPath
        self.appIdentifier = appIdentifier ?? ServiceProtocol.defaultAppIdentifier
        self.handlers = Mutex(handlers)
    }

    /// [any thread] Replaces where events and callbacks go.
    public func setHandlers(_ new: Handlers) { handlers.withLock { $0 = new } }

    /// Whether `disconnect()` was called.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// [any thread] Opens the connection now, throwing what the service or the socket said.
    public func connect() throws(HostError) { _ = try connection() }

    /// [any thread] Opens the connection on a thread of its own, so that events start to arrive.
    public func connectInBackground() {
        Threads.start { _ = try? self.connection() }
    }

    /// [any thread but a handler's] Closes the connection for good: callbacks still waiting are not answered (the
    /// service offers them again), and nothing reconnects. When it returns, the reader thread has ended: the shutdown
    /// of the socket ends its read at once, and the handlers it calls return at once (they only hand over).
    public func disconnect() {
        let connection = state.withLock { state -> Connection? in
            state.closed = true
            state.wantsDelegate = false
            defer { state.connection = nil }
            return state.connection
        }
        connection?.socket.close()
        releaseExclusiveControl()
        // The reader sees the end at once; waiting for it means no thread of this client still runs when the caller
        // goes on (a C app that exits right after ba_app_disconnect would otherwise tear the runtime down under it).
        _ = connection?.readerFinished.wait()
    }

    // MARK: Calls

    /// [any thread; blocks for a round trip] Any request; a failure reply is thrown as the service's error.
    public func request(_ request: ServiceRequest) throws(HostError) -> ServiceReply {
        try connection().request(request)
    }

    /// [any thread; blocks for a round trip] A request whose answer is `ok`.
    public func expectOK(_ request: ServiceRequest) throws(HostError) {
        guard case .ok = try connection().request(request) else {
            throw Self.invalid("the service answered with something unexpected")
        }
    }

    /// [any thread; blocks for a round trip] `fetchCurrentDownloads`, as the service's reply, read in place.
    public func currentDownloadsReply() throws(HostError) -> DownloadsReply {
        guard case .downloads(let reply) = try connection().exchange(.currentDownloads) else {
            throw Self.invalid("the service answered fetchCurrentDownloads with something else")
        }
        return reply
    }

    /// [any thread] The app set or cleared its delegate: the service is told, and while one is set the client
    /// stays connected.
    public func delegateChanged(isSet: Bool) {
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

    /// [any thread] The answer to a callback; one to a connection that ended is dropped (the service offers the
    /// callback again).
    public func answer(_ callback: CallbackID, _ reply: CallbackReply) {
        callback.connection.answer(callback.id, reply)
    }

    /// [any thread; blocks for a round trip] The app says whether a game of its runs: while one does, the person's
    /// `game.while-playing` setting holds or slows background downloads, as for a GameMode client. Kept across a
    /// reconnection; the app's end is the game's.
    public func setPlaying(_ playing: Bool) throws(HostError) {
        // Connected before it is recorded: a connection made after would say it, and this call would say it again.
        _ = try? connection()
        state.withLock { $0.playing = playing }
        try expectOK(.setPlaying(playing))
    }

    /// [any thread] The app's own app group container, as the service reports it; nil when it cannot be reached.
    public var appContainerPath: String? { (try? connection().hello.containerPath).flatMap { $0 } }

    /// [any thread] The app group's container, as the service reports it; nil for a group that is not the app's.
    public func containerPath(forGroup group: String) -> String? {
        guard let hello = try? connection().hello, hello.appGroupIdentifier == group else { return nil }
        return hello.containerPath
    }

    // MARK: Exclusive control

    /// [any thread; blocks] The lock is a `flock` on the file the service names, which the app's extension windows
    /// take too. Each acquisition opens its own descriptor, so that two threads of the app also exclude each other.
    /// `timeoutMilliseconds` < 0 waits as long as needed, 0 tries once; past it, NSPOSIXErrorDomain ETIMEDOUT.
    public func acquireExclusiveControl(timeoutMilliseconds: Int64) throws(HostError) {
        guard let path = try connection().hello.exclusiveControlLockPath else {
            throw Self.invalid("the service named no exclusive-control lock")
        }
        // Its folder may not exist yet: a fresh runtime folder, before any extension window has taken the lock.
        // (If it cannot be made, the open below says why.)
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex { mkdir(String(path[..<slash]), 0o700) }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw HostError.posix(errno, "cannot open the exclusive-control lock \(path)") }
        let deadline = MonotonicClock.now + .milliseconds(max(0, timeoutMilliseconds))
        var pause = Duration.milliseconds(1)
        while true {
            let operation = timeoutMilliseconds < 0 ? LOCK_EX : LOCK_EX | LOCK_NB
            if flock(descriptor, operation) == 0 { break }
            let failure = errno
            if failure == EINTR { continue }
            guard failure == EWOULDBLOCK, MonotonicClock.now < deadline else {
                close(descriptor)
                if failure == EWOULDBLOCK {
                    throw HostError.posix(ETIMEDOUT, "exclusive control was not acquired before the date")
                }
                throw HostError.posix(failure, String(cString: strerror(failure)))
            }
            Threads.sleep(pause)
            pause = min(pause * 2, .milliseconds(20))
        }
        state.withLock { $0.lockDescriptor = descriptor }
    }

    /// [any thread] Gives up exclusive control; nothing happens when it is not held.
    public func releaseExclusiveControl() {
        let descriptor = state.withLock { state in
            defer { state.lockDescriptor = -1 }
            return state.lockDescriptor
        }
        if descriptor >= 0 { close(descriptor) }
    }

    // MARK: The connection

    /// The live connection, opened (and introduced) when there is none.
    private func connection() throws(HostError) -> Connection {
        let (live, closed) = state.withLock { ($0.connection, $0.closed) }
        if let live { return live }
        guard !closed else { throw Self.invalid("this connection to the bahost service was closed (disconnect)") }
        guard let appIdentifier else {
            throw HostError(
                BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED,
                "this process has no app identity: set BAHOST_APP_IDENTIFIER (bahost launch APP -- COMMAND does), "
                    + "or run it as a Flatpak")
        }
        let socket: FramedSocket
        do {
            socket = try FramedSocket.connect(to: socketPath)
        } catch {
            throw Self.invalid("the bahost service is not reachable at \(socketPath) (\(error)); start `bahost daemon`")
        }
        let connection = Connection(socket: socket, client: self)
        connection.startReading()
        do throws(HostError) {
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
        if state.withLock({ $0.playing }) { _ = try? connection.request(.setPlaying(true)) }
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
        Threads.start {
            while self.state.withLock({ $0.wantsDelegate && $0.connection == nil }) {
                if (try? self.connection()) != nil { break }
                Threads.sleep(.milliseconds(200))
            }
            self.state.withLock { $0.reconnecting = false }
        }
    }

    fileprivate func handle(_ event: AppEvent) { handlers.withLock { $0 }.event(event) }

    fileprivate func handle(_ callback: AppCallback, id: UInt64, on connection: Connection) {
        handlers.withLock { $0 }.callback(callback, CallbackID(id: id, connection: connection))
    }

    /// Apple's 56: the connection to the service is not there.
    public static func invalid(_ message: String) -> HostError { HostError(BA_ERROR_CALLER_CONNECTION_INVALID, message) }
}

/// One connection to the service, read by a thread of its own.
private final class Connection: @unchecked Sendable {  // safe: `hello` set before sharing; the rest locks
    let socket: FramedSocket
    let client: AppClient
    private let waiters = Mutex<[UInt64: OneShot<Answer?>]>([:])
    private let nextIdentifier = Atomic<UInt64>(1)
    private let ended = Atomic(false)
    /// The service's refusal of this connection (a reply to id 0, sent before it read anything), once read.
    private let refusal = Mutex<HostError?>(nil)
    /// Given when the reader thread has finished.
    let readerFinished = OneShot<Bool>()
    /// Set once, before the connection is shared.
    var hello = HelloReply(serviceVersion: "")

    init(socket: FramedSocket, client: AppClient) {
        self.socket = socket
        self.client = client
    }

    func startReading() {
        Threads.start { self.read() }
    }

    func request(_ request: ServiceRequest) throws(HostError) -> ServiceReply {
        switch try exchange(request) {
        case .reply(let reply):
            return reply
        case .downloads(let reply):
            do {
                return .downloads(try reply.downloads())
            } catch {
                throw AppClient.invalid("the service's reply: \(error)")
            }
        }
    }

    /// Sends `request` and waits for its answer; a failure reply is thrown as the service's error.
    func exchange(_ request: ServiceRequest) throws(HostError) -> Answer {
        let id = nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
        let waiter = OneShot<Answer?>()
        waiters.withLock { $0[id] = waiter }
        guard !ended.load(ordering: .acquiring) else {
            waiters.withLock { _ = $0.removeValue(forKey: id) }
            throw refusal.withLock { $0 } ?? AppClient.invalid("the connection to the bahost service ended")
        }
        do {
            try socket.send(try ServiceProtocol.encode(ClientMessage.request(id: id, request)))
        } catch {
            // The service closed the connection: it may have said why first, which the reader finds before the end
            // of the stream.
            if case .system(_, let code)? = error as? ServiceWireError, code == EPIPE || code == ECONNRESET {
                _ = waiter.wait()
                if let refusal = refusal.withLock({ $0 }) { throw refusal }
            }
            waiters.withLock { _ = $0.removeValue(forKey: id) }
            throw AppClient.invalid("cannot send to the bahost service: \(error)")
        }
        guard let reply = waiter.wait() else {
            throw refusal.withLock { $0 } ?? AppClient.invalid("the connection to the bahost service ended")
        }
        if case .reply(.failure(let error)) = reply { throw error }
        return reply
    }

    func answer(_ id: UInt64, _ reply: CallbackReply) {
        guard let frame = try? ServiceProtocol.encode(ClientMessage.callbackReply(id: id, reply)) else { return }
        try? socket.send(frame)
    }

    private func read() {
        // No polling after a reply, unlike the service after a request: the next reply is a whole service call away
        // (a transaction, longer than the poll), so the poll only kept a core busy that the caller and the service
        // needed (docs/performance/DECISIONS.md #35).
        while let frame = try? socket.receive() {
            // A reply of downloads is read by its caller, where it is used (`DownloadsReply`).
            if let downloads = DownloadsReply(frame: frame) {
                waiters.withLock { $0.removeValue(forKey: downloads.id) }?.give(.downloads(downloads))
                continue
            }
            guard let message = try? ServiceProtocol.decodeServiceMessage(frame) else { break }
            switch message {
            case .reply(0, let reply):
                // Id 0 answers no request: the service's refusal of the connection, sent before it read anything.
                // It may come before the hello is sent; every request then gets it.
                if case .failure(let error) = reply { refusal.withLock { $0 = error } }
                for waiter in waiters.withLock({ waiters in defer { waiters = [:] }; return waiters.values }) {
                    waiter.give(.reply(reply))
                }
            case .reply(let id, let reply):
                waiters.withLock { $0.removeValue(forKey: id) }?.give(.reply(reply))
            case .event(let event):
                client.handle(event)
            case .callback(let id, let callback):
                client.handle(callback, id: id, on: self)
            case .progress:
                break
            }
        }
        ended.store(true, ordering: .releasing)
        socket.close()
        // The client forgets the connection before its callers hear it ended: the next call then connects again.
        client.connectionEnded(self)
        for waiter in waiters.withLock({ waiters in defer { waiters = [:] }; return waiters.values }) {
            waiter.give(nil)
        }
        readerFinished.give(true)
    }
}

/// What a request is answered with: a reply of downloads stays a frame until its caller reads it.
private enum Answer: Sendable {
    case reply(ServiceReply)
    case downloads(DownloadsReply)
}
