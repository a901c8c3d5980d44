import CHostSupport
import Engine
import Foundation
import ServiceWire
import Synchronization
import Vocabulary

/// One connection to the service: an app process, or the `bahost` command line. It is read by a thread of its own.
/// An app's requests (schedule, cancel, fetch…) are answered on that thread, in order: they touch only the queue,
/// and a round trip without a hop to another thread is what lets an app schedule thousands a second. Other
/// requests are answered from a task, so that a long control command (an install waits for its essential
/// downloads) does not hold up the connection.
final class ClientSession: Sendable {
    let socket: FramedSocket
    let peerPID: Int32
    /// The Flatpak the peer runs in, proved when it connected (`FlatpakPeer`); nil for a native process.
    let flatpak: FlatpakInfo?
    private let state = Mutex(State())
    /// Everything sent to the client goes through it: no sender waits for the client to read.
    private let outbox: SessionOutbox

    private struct State {
        var hello: Hello?
        var hasDelegate = false
        var nextCallback: UInt64 = 1
        var callbacks: [UInt64: CheckedContinuation<CallResult, Never>] = [:]
        var ended = false
    }

    /// - Parameter closedOverLimit: called once, with why, when the client's unread backlog passed a bound of
    ///   `limits` and its connection was closed.
    init(
        socket: FramedSocket, peerPID: Int32, flatpak: FlatpakInfo? = nil, limits: SessionOutbox.Limits,
        closedOverLimit: @escaping @Sendable (String) -> Void
    ) {
        self.socket = socket
        self.peerPID = peerPID
        self.flatpak = flatpak
        outbox = SessionOutbox(socket: socket, limits: limits, overLimit: closedOverLimit)
    }

    var hello: Hello? { state.withLock { $0.hello } }
    var appIdentifier: String? { state.withLock { $0.hello?.role == .app ? $0.hello?.appIdentifier : nil } }
    var hasDelegate: Bool { state.withLock { $0.hasDelegate && !$0.ended } }

    func introduce(_ hello: Hello) { state.withLock { $0.hello = hello } }
    func setDelegate(_ set: Bool) { state.withLock { $0.hasDelegate = set } }

    /// Sends a message; false when the connection is gone. Never waits for the client (`SessionOutbox`).
    @discardableResult
    func send(_ message: ServiceMessage) -> Bool {
        guard let data = try? ServiceProtocol.encode(message) else { return false }
        return send(data)
    }

    /// Sends an encoded message; false when the connection is gone.
    @discardableResult
    private func send(_ data: Frame, fromReader: Bool = false) -> Bool {
        // A large reply (fetchCurrentDownloads of a long queue) leaves tens of MiB freed but held by the heap.
        if data.count > 1 << 20 { HeapRelease.soon() }
        return (fromReader ? outbox.sendAndWait(data) : outbox.send(data)) == .accepted
    }

    /// Sends a reply from the reading thread: it waits until the client has taken everything sent to it.
    private func reply(_ message: ServiceMessage) {
        guard let data = try? ServiceProtocol.encode(message) else { return }
        send(data, fromReader: true)
    }

    /// How a question to the app ended.
    enum CallResult: Sendable {
        case replied(CallbackReply)
        /// `timeout` passed, or the connection ended, after the question was sent.
        case noAnswer
        /// The connection had ended: the app never saw the question.
        case notSent

        var reply: CallbackReply? {
            if case .replied(let reply) = self { return reply }
            return nil
        }
    }

    /// Asks the app a question and waits for its answer, at most `timeout`.
    func call(_ callback: AppCallback, timeout: Duration) async -> CallResult {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextCallback += 1 }
            return state.nextCallback
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            self.answer(id, .noAnswer)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let ended = state.withLock { state -> Bool in
                if state.ended { return true }
                state.callbacks[id] = continuation
                return false
            }
            if ended || !send(.callback(id: id, callback)) { answer(id, .notSent, orResume: ended ? continuation : nil) }
        }
    }

    private func answer(_ id: UInt64, _ result: CallResult, orResume fallback: CheckedContinuation<CallResult, Never>? = nil) {
        let waiter = state.withLock { $0.callbacks.removeValue(forKey: id) }
        (waiter ?? fallback)?.resume(returning: result)
    }

    /// An answer given on the reading thread: a reply, or its frame already written (a reply of downloads written
    /// from the queue's rows, `DownloadsReply.Builder`).
    enum Answer {
        case reply(ServiceReply)
        case frame(Frame)
    }

    /// Reads requests until the peer goes away, then calls `ended` once. `immediate` answers a request on the reading
    /// thread, or returns nil to leave it to `handle`, on a task.
    func startReading(
        immediate: @escaping @Sendable (ClientSession, UInt64, ServiceRequest) -> Answer?,
        handle: @escaping @Sendable (ClientSession, UInt64, ServiceRequest) async -> ServiceReply,
        ended: @escaping @Sendable (ClientSession) -> Void
    ) {
        Thread.detachNewThread {
            bahost_name_thread("bahost-client")
            // Right after answering, the next request is most likely on its way (an app scheduling in a loop).
            var polling = Duration.zero
            while let frame = try? self.socket.receive(polling: polling) {
                polling = .zero
                guard let message = try? ServiceProtocol.decodeClientMessage(frame) else {
                    // Not our protocol: say so and end the connection rather than guess.
                    self.reply(.reply(id: 0, .failure(HostError(
                        code: 56, domain: "BAErrorDomain", message: "the service could not read a message; closing"))))
                    break
                }
                switch message {
                case .request(let id, let request):
                    if let answer = immediate(self, id, request) {
                        switch answer {
                        case .reply(let reply): self.reply(.reply(id: id, reply))
                        case .frame(let frame): self.send(frame, fromReader: true)
                        }
                        polling = FramedSocket.roundTripPolling
                    } else {
                        Task { self.send(.reply(id: id, await handle(self, id, request))) }
                    }
                case .callbackReply(let id, let reply):
                    self.answer(id, .replied(reply))
                }
            }
            self.socket.close()
            let waiting = self.state.withLock { state -> [CheckedContinuation<CallResult, Never>] in
                state.ended = true
                defer { state.callbacks = [:] }
                return Array(state.callbacks.values)
            }
            waiting.forEach { $0.resume(returning: .noAnswer) }
            ended(self)
        }
    }
}
