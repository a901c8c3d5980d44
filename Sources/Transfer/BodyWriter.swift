import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// One response of a transfer attempt, read on the HTTP client's event loop: the body goes into the partial file on
/// the thread that read it from the socket, and the transfer's task hears only of the head, of progress every
/// `progressInterval`, and of the end.
///
/// Why on the event loop: a body handed to the transfer's task chunk by chunk cost a thread wake-up per chunk on top
/// of its write. A `write` of what is already in memory does not wait for the disk (the sync, which does, runs on
/// `TransferClient.perform`'s `blocking` executor), so the loop is held no longer than by a copy. The host's
/// transfers run their task on this same event loop until the body ends, so the head's event and the end's wake
/// no other thread.
///
/// A large body is the exception: past `handOffAfter` bytes its parts are written on a queue of their own
/// (`BodyWriteQueue`), so that the loop reads the socket while the disk's side copies.
///
/// Sequence: `.head` first; the task judges it and either lends the file (`writeBody`) or refuses the body
/// (`discard`); `.ended` comes last, once, after which `returnFile` gives the file back. What arrives before the
/// task has judged the head is kept in memory (up to `heldBytesLimit`, then the socket waits): a connection that
/// breaks meanwhile still leaves those bytes to write and resume from.
final class BodyWriter: HTTPClientResponseDelegate {
    typealias Response = Void

    enum Event: Sendable {
        case head(status: Int, headers: HTTPHeaders)
        /// The file now holds this many bytes.
        case progress(Int64)
        /// The response ended: whole (nil), or with this failure (the request's error, or the file's).
        case ended(TransferError?)
    }

    /// Limits the body must keep, checked before each part is written.
    struct Bounds: Sendable {
        /// Exact bytes the file may reach (a promised size), or 0.
        var expectedSize: Int64
        var byteLimit: Int64?
    }

    /// The most body bytes held in memory while the task judges the head.
    static let heldBytesLimit = 1 << 20

    /// A body's bytes written on the event loop before the rest goes to a `BodyWriteQueue`: a body this large is
    /// bound by its copies, not by its round trips.
    static let handOffAfter: Int64 = 8 << 20

    private struct State {
        /// The file while the event loop writes it; nil once handed to `writes`, until they give it back.
        var file: PartialFile?
        var writes: BodyWriteQueue?
        /// The file's length once every part written or queued is in it.
        var length: Int64 = 0
        /// This response's bytes, written or queued.
        var bodyBytes: Int64 = 0
        var bounds = Bounds(expectedSize: 0, byteLimit: nil)
        /// Whether the task has lent the file (or refused the body).
        var judged = false
        /// Parts that arrived before the head was judged, and the socket's wait when they reached the limit.
        var held: [ByteBuffer] = []
        var heldBytes = 0
        var resumeReading: EventLoopPromise<Void>?
        /// The body ended whole before the head was judged.
        var finishedEarly = false
        var lastReport = ContinuousClock.now
        /// Where the current stretch of `MinimumRate` began (the file lent at first), and the bytes it has brought.
        var stretchStart = ContinuousClock.now
        var stretchBytes: Int64 = 0
        /// Why the body was refused while it arrived (a bound passed, a failed write): reported as the end.
        var refusal: TransferError?
        var ended = false

        /// Counts a part that arrived `now` toward the minimum rate; false (with `refusal` set) when the stretch that
        /// ends with it brought too little.
        mutating func keepsUp(_ buffer: ByteBuffer, now: ContinuousClock.Instant, _ rate: MinimumRate) -> Bool {
            stretchBytes += Int64(buffer.readableBytes)
            guard now - stretchStart >= rate.window else { return true }
            guard stretchBytes >= rate.bytes else {
                refusal = TransferError(
                    .transient, code: -1001, domain: TransferError.urlDomain,  // NSURLErrorTimedOut
                    message: "the server sent \(stretchBytes) bytes in \(Self.seconds(now - stretchStart)) s; a transfer "
                        + "must bring at least \(rate.bytes) bytes every \(Self.seconds(rate.window)) s")
                return false
            }
            stretchStart = now
            stretchBytes = 0
            return true
        }

        private static func seconds(_ duration: Duration) -> String {
            String(format: "%.1f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
        }

        /// Writes one part within the bounds: here, or queued on `writes` once the body has passed `handOffAfter`
        /// (`loop` is the event loop reading it; none for the parts held before the head was judged). Returns false
        /// (with `refusal` set) when it cannot, else what to wait for before reading on (a full queue), if anything.
        mutating func write(
            _ buffer: ByteBuffer, readOn loop: (any EventLoop)? = nil
        ) -> (Bool, EventLoopFuture<Void>?) {
            guard refusal == nil else { return (false, nil) }
            var wait: EventLoopFuture<Void>?
            let after = length + Int64(buffer.readableBytes)
            if bounds.expectedSize > 0 && after > bounds.expectedSize {
                refusal = .permanent(
                    TransferError.sizeMismatch, "the server sent more than the declared \(bounds.expectedSize) bytes")
            } else if let limit = bounds.byteLimit, after > limit {
                refusal = .permanent(TransferError.byteLimitExceeded, "the transfer passed its limit of \(limit) bytes")
            } else if let writes {
                switch writes.append(buffer) {
                case .success(let full): wait = full
                case .failure(let error): refusal = error
                }
            } else if let error = buffer.withUnsafeReadableBytes({ file!.append($0) }) {
                refusal = error
            }
            guard refusal == nil else { return (false, nil) }
            length = after
            bodyBytes += Int64(buffer.readableBytes)
            if writes == nil, let loop, bodyBytes >= BodyWriter.handOffAfter {
                writes = BodyWriteQueue(file!, readOn: loop)
                file = nil
            }
            return (true, wait)
        }

        /// The file's length as written so far.
        var writtenLength: Int64 { writes?.writtenLength ?? file!.length }
    }

    let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let state = Mutex(State())
    private let progressInterval: Duration
    private let minimumRate: MinimumRate
    /// Called the moment the body has ended whole, before the task hears of it.
    private let bodyEnded: @Sendable () -> Void

    init(
        progressInterval: Duration = .milliseconds(100), minimumRate: MinimumRate = .default,
        bodyEnded: @escaping @Sendable () -> Void
    ) {
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
        self.progressInterval = progressInterval
        self.minimumRate = minimumRate
        self.bodyEnded = bodyEnded
    }

    /// Lends the file to the event loop: what arrived meanwhile is written now, the rest as it comes. Returns why
    /// the body was refused, when what had arrived already passed a bound or could not be written.
    func writeBody(into file: PartialFile, bounds: Bounds) -> TransferError? {
        let (refusal, resume, finished) = state.withLock { state in
            state.file = file
            state.length = file.length
            state.bounds = bounds
            state.judged = true
            state.lastReport = .now
            // The body's pace counts from here: before the head is judged the socket may wait for the host, and
            // the connection and the server's first answer are the timeouts' business.
            state.stretchStart = .now
            for part in state.held where !state.write(part).0 { break }
            state.held = []
            state.heldBytes = 0
            defer { state.resumeReading = nil }
            return (state.refusal, state.resumeReading, state.finishedEarly)
        }
        if let refusal {
            resume?.fail(refusal)
            return refusal
        }
        resume?.succeed()
        if finished { bodyEnded() }
        return nil
    }

    /// Refuses the body: the request is cancelled (its connection closed), and `.ended` follows.
    func discard(_ task: HTTPClient.Task<Void>) {
        let resume = state.withLock { state in
            state.judged = true
            state.held = []
            defer { state.resumeReading = nil }
            return state.resumeReading
        }
        task.cancel()
        resume?.fail(HTTPClientError.cancelled)
    }

    /// The file lent by `writeBody`, once `.ended` was reported.
    func returnFile() -> PartialFile? {
        state.withLock { state in
            defer { state.file = nil }
            return state.file
        }
    }

    // MARK: HTTPClientResponseDelegate, on the event loop

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        continuation.yield(.head(status: Int(head.status.code), headers: head.headers))
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        enum Next {
            case read, wait(EventLoopFuture<Void>), refuse(TransferError), report(Int64, wait: EventLoopFuture<Void>?)
        }
        let now = ContinuousClock.now
        let next = state.withLock { state -> Next in
            guard state.judged else {
                state.held.append(buffer)
                state.heldBytes += buffer.readableBytes
                guard state.heldBytes >= Self.heldBytesLimit else { return .read }
                let promise = task.eventLoop.makePromise(of: Void.self)
                state.resumeReading = promise
                return .wait(promise.futureResult)
            }
            // Neither: refused by `discard`, the request is being cancelled.
            guard state.file != nil || state.writes != nil else { return .read }
            guard state.keepsUp(buffer, now: now, minimumRate) else { return .refuse(state.refusal!) }
            let (written, wait) = state.write(buffer, readOn: task.eventLoop)
            guard written else { return .refuse(state.refusal!) }
            guard now - state.lastReport >= progressInterval else { return wait.map { .wait($0) } ?? .read }
            state.lastReport = now
            return .report(state.writtenLength, wait: wait)
        }
        switch next {
        case .read:
            return task.eventLoop.makeSucceededVoidFuture()
        case .wait(let future):
            return future
        case .refuse(let refusal):
            return task.eventLoop.makeFailedFuture(refusal)
        case .report(let length, let wait):
            continuation.yield(.progress(length))
            return wait ?? task.eventLoop.makeSucceededVoidFuture()
        }
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: Error) {
        let (resume, refusal, writes) = state.withLock { state in
            defer { state.resumeReading = nil }
            return (state.resumeReading, state.refusal, state.writes)
        }
        resume?.fail(error)
        guard let writes else { return end(refusal ?? TransferClient.classify(error)) }
        // What was queued is written first: the file is resumed from all that arrived. A write that failed (a full
        // disk) says more than the request's end.
        writes.finish { [self] file, written in
            state.withLock { $0.file = file }
            end(refusal ?? written ?? TransferClient.classify(error))
        }
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        let (lent, writes) = state.withLock { state in
            if !state.judged { state.finishedEarly = true }
            return (state.file != nil, state.writes)
        }
        guard let writes else {
            if lent { bodyEnded() }
            return end(nil)
        }
        writes.finish { [self] file, failure in
            state.withLock { $0.file = file }
            if failure == nil { bodyEnded() }
            end(failure)
        }
    }

    private func end(_ failure: TransferError?) {
        let first = state.withLock { state in
            defer { state.ended = true }
            return !state.ended
        }
        guard first else { return }
        continuation.yield(.ended(failure))
        continuation.finish()
    }
}
