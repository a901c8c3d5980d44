import Dispatch
import Foundation
import ServiceWire
import Synchronization

/// What the service sends one connection, in order, such that no thread the service shares waits for that client
/// to read.
///
/// Events reach a connection from the engine's turns, the transfers' event loops and delivery's tasks; with a
/// blocking send, one app that stopped reading its socket (hung, or hostile) once the kernel's buffer filled would
/// hold that thread, and with it every other app's transfers and deliveries. Here a frame is written at once as far
/// as the socket takes it; what is left waits here, and the connection's writer (a serial queue, busy only while
/// something waits) sends it as the client reads. Bounds, both named in the notice that closes the connection:
/// - `Limits.unreadBytes`: the events that may wait behind the frame being written (a reply is not counted: the
///   reader thread that sends it waits for it). A sender that would pass it closes the connection instead.
/// - `Limits.stall`: how long the writer waits for the client to take any byte at all.
///
/// The connection's own reader thread (its requests' replies) is the one sender that waits: after a reply it waits
/// until everything is sent before it reads the next request, so a client that asks without reading gets no
/// further, and its replies pile up nowhere.
final class SessionOutbox: Sendable {
    struct Limits: Sendable {
        /// Bytes of events that may wait behind the frame being written.
        var unreadBytes: Int
        /// The longest the client may take no byte of what waits.
        var stall: Duration
    }

    /// How a send went.
    enum Sent {
        /// Written, or waiting to be written in order.
        case accepted
        /// The connection is closed (now, by this send passing a bound, or before).
        case closed
    }

    private struct State {
        /// The frame the writer is sending, and how much of it (its length included) is sent.
        var current: (frame: Frame, sent: Int)?
        /// Frames waiting their turn; `counted`: an event's, counted in `waitingBytes` against the bound (a reply is
        /// not: the reader thread that sends it waits for it, which bounds replies to one).
        var waiting: [(frame: Frame, counted: Bool)] = []
        var waitingBytes = 0
        /// A sender or the writer is writing: a new frame waits its turn.
        var writing = false
        var closed = false
        /// Reader threads waiting for everything to be sent.
        var drainWaiters: [DispatchSemaphore] = []
    }

    private let socket: FramedSocket
    private let limits: Limits
    private let state = Mutex(State())
    private let writer = DispatchQueue(label: "bahost.session-writer")
    /// Called once, with why, when a bound closes the connection.
    private let overLimit: @Sendable (String) -> Void

    init(socket: FramedSocket, limits: Limits, overLimit: @escaping @Sendable (String) -> Void) {
        self.socket = socket
        self.limits = limits
        self.overLimit = overLimit
    }

    /// Sends one frame's payload, never waiting for the client: written now as far as the socket takes it, the
    /// rest in order by the connection's writer.
    @discardableResult
    func send(_ payload: Frame) -> Sent {
        enum Step { case write, queued, closed, over(Int) }
        let step = state.withLock { state -> Step in
            if state.closed { return .closed }
            guard state.writing || !state.waiting.isEmpty else {
                state.writing = true
                return .write
            }
            guard state.waitingBytes + payload.count <= limits.unreadBytes else { return .over(state.waitingBytes) }
            state.waiting.append((payload, true))
            state.waitingBytes += payload.count
            return .queued
        }
        switch step {
        case .closed:
            return .closed
        case .queued:
            return .accepted
        case .over(let waiting):
            close(
                "\(waiting) bytes were waiting for the client to read them, and \(payload.count) more would pass the "
                    + "limit of \(limits.unreadBytes) bytes unread")
            return .closed
        case .write:
            var sent = 0
            do {
                if try socket.sendAvailable(payload, sent: &sent) {
                    writtenWhole()
                } else {
                    state.withLock { $0.current = (payload, sent) }
                    writer.async { self.drain() }
                }
                return .accepted
            } catch {
                close(nil)
                return .closed
            }
        }
    }

    /// Sends a reply from the connection's reader thread and waits until all that waits is sent (or the connection
    /// is closed): the reader's backpressure. Its only wait is on this client.
    @discardableResult
    func sendAndWait(_ payload: Frame) -> Sent {
        // A reply is the client's own answer: it waits whatever the backlog (the stall bound ends a client that
        // takes none of it).
        let semaphore = state.withLock { state -> DispatchSemaphore? in
            guard !state.closed, state.writing || !state.waiting.isEmpty else { return nil }
            state.waiting.append((payload, false))
            let semaphore = DispatchSemaphore(value: 0)
            state.drainWaiters.append(semaphore)
            return semaphore
        }
        guard let semaphore else {
            let sent = send(payload)
            if sent == .closed { return .closed }
            return waitForDrain()
        }
        semaphore.wait()
        return state.withLock { $0.closed } ? .closed : .accepted
    }

    private func waitForDrain() -> Sent {
        let semaphore = state.withLock { state -> DispatchSemaphore? in
            guard !state.closed, state.writing else { return nil }
            let semaphore = DispatchSemaphore(value: 0)
            state.drainWaiters.append(semaphore)
            return semaphore
        }
        semaphore?.wait()
        return state.withLock { $0.closed } ? .closed : .accepted
    }

    /// A sender wrote its frame whole: the writer takes over if others queued meanwhile.
    private func writtenWhole() {
        let (more, waiters) = state.withLock { state -> (Bool, [DispatchSemaphore]) in
            if !state.waiting.isEmpty { return (true, []) }
            state.writing = false
            defer { state.drainWaiters = [] }
            return (false, state.drainWaiters)
        }
        waiters.forEach { $0.signal() }
        if more { writer.async { self.drain() } }
    }

    /// On the writer: sends what waits, in order, as the client takes it.
    private func drain() {
        while true {
            var waiters: [DispatchSemaphore] = []
            let next = state.withLock { state -> (Frame, Int)? in
                if let current = state.current, !state.closed { return current }
                guard !state.closed, !state.waiting.isEmpty else {
                    // Nothing waits any more: in the same lock as a sender's look, so that none queues behind a
                    // writer that has stopped.
                    state.writing = false
                    waiters = state.drainWaiters
                    state.drainWaiters = []
                    return nil
                }
                let (frame, counted) = state.waiting.removeFirst()
                if counted { state.waitingBytes -= frame.count }
                state.current = (frame, 0)
                return (frame, 0)
            }
            guard let (frame, alreadySent) = next else { return waiters.forEach { $0.signal() } }
            var sent = alreadySent
            do {
                if try socket.sendAvailable(frame, sent: &sent) {
                    state.withLock { $0.current = nil }
                    continue
                }
            } catch {
                return close(nil)
            }
            state.withLock { $0.current = (frame, sent) }
            guard socket.waitWritable(timeout: limits.stall) else {
                return close("the client took no byte of what waited for it in \(limits.stall)")
            }
        }
    }

    /// Closes the connection (its reader then ends the session) and drops what waits; `reason` is a bound passed.
    private func close(_ reason: String?) {
        let (first, waiters) = state.withLock { state -> (Bool, [DispatchSemaphore]) in
            defer {
                state.closed = true
                state.current = nil
                state.waiting = []
                state.waitingBytes = 0
                state.drainWaiters = []
            }
            return (!state.closed, state.drainWaiters)
        }
        socket.close()
        waiters.forEach { $0.signal() }
        if first, let reason { overLimit(reason) }
    }
}
