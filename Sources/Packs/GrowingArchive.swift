import CArchive
import CHostSupport
import Foundation
import Synchronization

/// An archive read while it is still being written: the partial file of a pack's download, which the transfer
/// appends to while the pack is unpacked from it (`PackStore.unpack(_:entry:)`). A read at the file's current end
/// waits for more until the transfer says where the archive ends (`finish`) or gives up (`abandon`, also what a
/// restart of the file from its first byte means: what was read no longer describes it).
///
/// The wait is on descriptors: inotify says the file was written, a pipe that `finish` and `abandon` write says
/// the transfer ended. Both are watched from before the first read, so a write or an end that comes between a read
/// and the wait ends the wait at once.
public final class GrowingArchive: Sendable {
    private let descriptor: Int32
    /// Inotify, watching the file for writes; and the pipe that an end is told through (read end, write end).
    private let writes: Int32
    private let ended: (read: Int32, write: Int32)
    private let state = Mutex(State())

    private struct State {
        /// The archive's length once the transfer ended with it whole.
        var end: Int64?
        var abandoned = false
        /// Bytes read so far.
        var offset: Int64 = 0
    }

    /// How long a wait at the file's end lasts before the reader looks again anyway: a guard against a write that
    /// inotify could not report (its queue overflowed), never the way a write is noticed.
    static let longestWait: Int32 = 1000

    /// Reads `path` from its first byte.
    public init(path: String) throws(PackError) {
        func failure(_ what: String) -> PackError { .io("cannot \(what) \(path): \(String(cString: strerror(errno)))") }
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("open") }
        writes = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        var ends: [Int32] = [-1, -1]
        guard writes >= 0, inotify_add_watch(writes, path, UInt32(IN_MODIFY)) >= 0,
            bahost_wake_pipe(&ends) == 0
        else {
            let error = failure("watch")
            close(descriptor)
            if writes >= 0 { close(writes) }
            throw error
        }
        ended = (ends[0], ends[1])
    }

    deinit {
        close(descriptor)
        close(writes)
        close(ended.read)
        close(ended.write)
    }

    /// The transfer ended with the whole archive, `length` bytes, verified.
    public func finish(length: Int64) {
        state.withLock { $0.end = length }
        tellEnded()
    }

    /// The transfer ended without the archive, or started the file again: the reader stops with an error.
    public func abandon() {
        state.withLock { $0.abandoned = true }
        tellEnded()
    }

    private func tellEnded() {
        var one: UInt8 = 1
        _ = write(ended.write, &one, 1)
    }

    /// Waits until the file is written to or the transfer ends (what either says is read again by the caller).
    private func waitForMore() {
        var fds = [pollfd(fd: writes, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: ended.read, events: Int16(POLLIN), revents: 0)]
        guard poll(&fds, 2, Self.longestWait) > 0 else { return }
        // Inotify's events only say "written": drained, so that the next wait waits for the next write. The pipe
        // stays readable: once ended, the reader never waits again.
        var drain = [UInt8](repeating: 0, count: 4096)
        while Glibc.read(writes, &drain, drain.count) > 0 {}
    }

    /// Whether the reader took exactly the archive the transfer finished with.
    public var readWhole: Bool { state.withLock { $0.end != nil && $0.offset == $0.end && !$0.abandoned } }

    /// Reads what is left up to the archive's end.
    public func drain() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        while let got = read(into: buffer), got > 0 {}
    }

    /// Fills `buffer` with the next bytes, waiting for them; 0 at the archive's end, nil when it was abandoned or
    /// cannot be read.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        while true {
            let (offset, end, abandoned) = state.withLock { ($0.offset, $0.end, $0.abandoned) }
            if abandoned { return nil }
            var wanted = buffer.count
            if let end { wanted = Int(min(Int64(wanted), end - offset)) }
            if wanted <= 0 { return 0 }
            let got = pread(descriptor, buffer.baseAddress, wanted, off_t(offset))
            if got < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if got > 0 {
                state.withLock { $0.offset += Int64(got) }
                return got
            }
            waitForMore()
        }
    }
}
