import Dispatch
import NIOCore
import Synchronization

/// The writes of a large body, made in order on a queue of their own while the event loop goes on reading the socket.
///
/// Why: a large body kept the one event loop busy from its first byte to its last (reading the socket, and copying
/// each part into the page cache), while the other core had time to spare; writing on a second thread lets the two
/// overlap. A small body stays on the event loop (`BodyWriter.handOffAfter`): for it the hand-off would cost more
/// than the copy (docs/PERFORMANCE.md, "A large body written beside the event loop").
///
/// Parts gather until `batch` bytes wait, then go to the queue together: handed over one by one, each woke the
/// writing thread, which had emptied the queue meanwhile, and the wake-ups cost more CPU than the copies saved. The
/// bytes not yet written stay under `highWater` plus one part: past it, the loop stops reading until the writes are
/// down to `batch`. The file is touched only on `queue` once handed over, until `finish` gives it back.
final class BodyWriteQueue: @unchecked Sendable {
    static let batch = 1 << 20
    static let highWater = 2 << 20

    private struct State {
        /// Parts not yet handed to the queue, and the bytes of those and of the ones it has yet to write.
        var waiting: [ByteBuffer] = []
        var waitingBytes = 0
        var unwritten = 0
        /// The length the file has reached on the queue.
        var written: Int64
        var failure: TransferError?
        var resumeReading: EventLoopPromise<Void>?
    }

    private let queue = DispatchQueue(label: "bahost.body-writes")
    /// The event loop that reads the body: it waits on `append`'s futures and hears of `finish` there.
    private let loop: any EventLoop
    private let state: Mutex<State>
    /// Only on `queue` (see above).
    private var file: PartialFile

    init(_ file: PartialFile, readOn loop: any EventLoop) {
        self.file = file
        self.loop = loop
        state = Mutex(State(written: file.length))
    }

    /// The length the file has reached so far (what has been written, not what waits).
    var writtenLength: Int64 { state.withLock { $0.written } }

    /// Takes `buffer` to be appended. Returns a future to wait for before reading on when too much waits to be
    /// written (nil when not), or the failure of a write made before.
    func append(_ buffer: ByteBuffer) -> Result<EventLoopFuture<Void>?, TransferError> {
        typealias Taken = (Result<EventLoopFuture<Void>?, TransferError>, [ByteBuffer])
        let (admitted, parts) = state.withLock { state -> Taken in
            if let failure = state.failure { return (.failure(failure), []) }
            state.waiting.append(buffer)
            state.waitingBytes += buffer.readableBytes
            state.unwritten += buffer.readableBytes
            var parts: [ByteBuffer] = []
            if state.waitingBytes >= Self.batch {
                swap(&parts, &state.waiting)
                state.waitingBytes = 0
            }
            guard state.unwritten >= Self.highWater else { return (.success(nil), parts) }
            let promise = loop.makePromise(of: Void.self)
            state.resumeReading = promise
            return (.success(promise.futureResult), parts)
        }
        if !parts.isEmpty { write(parts) }
        return admitted
    }

    /// Once every part taken is written, gives the file back with the first write's failure, on the event loop.
    func finish(_ done: @escaping @Sendable (PartialFile, TransferError?) -> Void) {
        let parts = state.withLock { state in
            defer { state.waiting = [] }
            state.waitingBytes = 0
            return state.waiting
        }
        write(parts)
        queue.async { [self] in
            let (file, failure) = (file, state.withLock { $0.failure })
            loop.execute { done(file, failure) }
        }
    }

    private func write(_ parts: [ByteBuffer]) {
        guard !parts.isEmpty else { return }
        queue.async { [self] in
            var error: TransferError?
            if state.withLock({ $0.failure == nil }) {
                for part in parts where error == nil { error = part.withUnsafeReadableBytes { file.append($0) } }
            }
            let length = file.length
            let resume = state.withLock { state -> EventLoopPromise<Void>? in
                state.unwritten -= parts.reduce(0) { $0 + $1.readableBytes }
                state.written = length
                if let error, state.failure == nil { state.failure = error }
                guard state.unwritten <= Self.batch || state.failure != nil else { return nil }
                defer { state.resumeReading = nil }
                return state.resumeReading
            }
            resume?.succeed()
        }
    }
}
