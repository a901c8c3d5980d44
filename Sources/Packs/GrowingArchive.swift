import CArchive
import Foundation
import Synchronization

/// An archive read while it is still being written: the partial file of a pack's download, which the transfer
/// appends to while the pack is unpacked from it (`PackStore.unpack(_:entry:)`). A read at the file's current end
/// waits for more until the transfer says where the archive ends (`finish`) or gives up (`abandon`, also what a
/// restart of the file from its first byte means: what was read no longer describes it).
public final class GrowingArchive: Sendable {
    private let descriptor: Int32
    private let state = Mutex(State())

    private struct State {
        /// The archive's length once the transfer ended with it whole.
        var end: Int64?
        var abandoned = false
        /// Bytes read so far.
        var offset: Int64 = 0
    }

    /// How long a read at the file's end sleeps before it looks again.
    static let pollInterval: useconds_t = 500

    /// Reads `path` from its first byte.
    public init(path: String) throws(PackError) {
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .io("cannot open \(path): \(String(cString: strerror(errno)))") }
    }

    deinit { close(descriptor) }

    /// The transfer ended with the whole archive, `length` bytes, verified.
    public func finish(length: Int64) { state.withLock { $0.end = length } }

    /// The transfer ended without the archive, or started the file again: the reader stops with an error.
    public func abandon() { state.withLock { $0.abandoned = true } }

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
            usleep(Self.pollInterval)
        }
    }
}
