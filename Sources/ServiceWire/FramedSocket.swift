import Glibc
import Synchronization

/// One end of a connection to the bahost service: a Unix stream socket carrying frames of a 4-byte big-endian
/// length followed by that many bytes of a message (`ServiceProtocol`).
///
/// Hand-written rather than built on SwiftNIO. The app's end lives in every app that links the SDK, which must stay
/// small, and its calls are synchronous, as Apple's API is. The service's end serves each connection on a thread of
/// its own, which reads a request, commits it and writes the reply with no hand-off: the same service on swift-nio's
/// async channels (peers checked through `SocketOptionProvider`) was measured slower, an event-loop wake-up and two
/// task hops per round trip (docs/performance/DECISIONS.md #34).
///
/// Thread rule: `send` and `sendAvailable` from any thread (frames never interleave, though a frame that
/// `sendAvailable` left unfinished must be finished before another is begun); `receive` from one reader thread at a
/// time.
public final class FramedSocket: Sendable {
    /// Frames longer than this end the connection: no message of the protocol comes near it.
    public static let maximumFrame = 64 << 20

    public let descriptor: Int32
    private let writeLock = Mutex(())

    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// The descriptor is released only here, once no thread can still be reading it (a reader holds a reference).
    deinit { Glibc.close(descriptor) }

    /// Connects to the service's socket at `path`.
    public static func connect(to path: String) throws(ServiceWireError) -> FramedSocket {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        var address = try unixAddress(path)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard status == 0 else {
            let error = errno
            Glibc.close(fd)
            throw .system("connect to \(path)", error)
        }
        return FramedSocket(descriptor: fd)
    }

    static func unixAddress(_ path: String) throws(ServiceWireError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw .protocolViolation("the socket path \(path) is too long for a Unix socket")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    /// Sends one frame, waiting for the socket as long as it takes.
    public func send(_ payload: some Collection<UInt8>) throws(ServiceWireError) {
        var sent = 0
        _ = try writeLock.withLock { _ throws(ServiceWireError) in try write(payload, sent: &sent, flags: 0) }
    }

    /// Sends what the socket takes now of one frame, without waiting: `sent` counts the frame's bytes sent so far
    /// (its 4-byte length included) and grows by what this call sent. True once the frame is whole. For a writer that
    /// must not wait for a peer that may not read (the service's: `SessionOutbox`); it keeps frames from interleaving.
    public func sendAvailable(_ payload: some Collection<UInt8>, sent: inout Int) throws(ServiceWireError) -> Bool {
        try writeLock.withLock { _ throws(ServiceWireError) in
            try write(payload, sent: &sent, flags: Int32(MSG_DONTWAIT))
        }
    }

    /// Waits until the socket can take more bytes, at most `timeout`; false when the time passed first.
    public func waitWritable(timeout: Duration) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
        let deadline = MonotonicClock.now + timeout
        while true {
            let left = deadline - MonotonicClock.now
            guard left > .zero else { return false }
            let milliseconds = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000
            let ready = poll(&entry, 1, Int32(clamping: max(1, milliseconds)))
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return true }  // the next send reports the error
        }
    }

    /// Writes the frame from `sent` on, until it is whole or (with `MSG_DONTWAIT`) the socket is full; true when whole.
    /// The length and the payload go out together (one sendmsg of two parts), without copying the payload into a
    /// frame first: a fetch of 10,000 downloads is a frame of megabytes.
    private func write(_ payload: some Collection<UInt8>, sent: inout Int, flags: Int32) throws(ServiceWireError) -> Bool {
        var length = UInt32(payload.count).bigEndian
        let total = 4 + payload.count
        let failure: Int32? = withUnsafeBytes(of: &length) { header in
            payload.withContiguousBytes { body -> Int32? in
                while sent < total {
                    let headerSent = min(sent, 4)
                    var parts: [iovec] = []
                    if headerSent < 4 {
                        parts.append(iovec(
                            iov_base: UnsafeMutableRawPointer(mutating: header.baseAddress! + headerSent),
                            iov_len: 4 - headerSent))
                    }
                    let bodySent = sent - headerSent
                    if bodySent < body.count {
                        parts.append(iovec(
                            iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress! + bodySent),
                            iov_len: body.count - bodySent))
                    }
                    let written = parts.withUnsafeMutableBufferPointer { parts in
                        var message = msghdr()
                        message.msg_iov = parts.baseAddress
                        message.msg_iovlen = parts.count
                        return sendmsg(descriptor, &message, Int32(MSG_NOSIGNAL) | flags)
                    }
                    if written < 0 {
                        if errno == EINTR { continue }
                        // A full socket ends a send that may not wait; a blocking one never says so.
                        if (errno == EAGAIN || errno == EWOULDBLOCK) && flags & Int32(MSG_DONTWAIT) != 0 { return nil }
                        return errno
                    }
                    sent += written
                }
                return nil
            }
        }
        if let failure { throw .system("send", failure) }
        return sent == total
    }

    /// How long the service looks for an app's next request without sleeping, right after answering one. An app
    /// that schedules in a loop then finds the service's reader awake, without a cross-CPU wake-up for each
    /// `scheduleDownload` (docs/performance/DECISIONS.md #35). It costs at most this much CPU per
    /// round trip, and nothing to a connection at rest. The app does not poll for replies: a reply is a whole
    /// service call away, longer than this.
    public static let roundTripPolling = Duration.microseconds(100)

    /// The next frame, or nil when the peer closed the connection. `polling`: how long to look for the frame with
    /// non-blocking reads before blocking for it.
    public func receive(polling: Duration = .zero) throws(ServiceWireError) -> Frame? {
        try reader.withLock { buffer throws(ServiceWireError) -> Frame? in
            guard try fill(&buffer, to: 4, polling: polling) else { return nil }
            let length = buffer.storage.withUnsafeBytes {
                Int(UInt32(bigEndian: $0.loadUnaligned(fromByteOffset: buffer.start, as: UInt32.self)))
            }
            guard length <= Self.maximumFrame else {
                throw .protocolViolation("a frame of \(length) bytes is over the limit of \(Self.maximumFrame)")
            }
            buffer.consume(4)
            if length > Self.keptBuffer { return try receiveLarge(length, after: &buffer) }
            guard try fill(&buffer, to: length, polling: .zero) else {
                throw .protocolViolation("the connection ended inside a frame")
            }
            defer { buffer.consume(length) }
            return Frame(buffer.storage[buffer.start ..< buffer.start + length])
        }
    }

    /// Bytes read but not yet returned (`start..<end` of `storage`): one `recv` usually brings a frame's length and
    /// its body together.
    private struct ReadBuffer {
        var storage: [UInt8] = []
        var start = 0
        var end = 0

        mutating func consume(_ count: Int) {
            start += count
            guard start == end else { return }
            start = 0
            end = 0
            // A large frame's room is given back rather than kept for the connection's life.
            if storage.count > FramedSocket.keptBuffer { storage = [] }
        }
    }

    /// The read buffer kept between frames.
    static let keptBuffer = 64 << 10
    private let reader = Mutex(ReadBuffer())

    /// A frame larger than the kept buffer, read straight into its own storage: a fetch's reply of megabytes was
    /// zero-filled into the buffer, read, then copied out, paying its page faults twice.
    private func receiveLarge(_ length: Int, after buffer: inout ReadBuffer) throws(ServiceWireError) -> Frame {
        guard let base = malloc(length) else { throw .protocolViolation("no memory for a frame of \(length) bytes") }
        let buffered = min(buffer.end - buffer.start, length)
        buffer.storage.withUnsafeBytes { storage in
            base.copyMemory(from: storage.baseAddress! + buffer.start, byteCount: buffered)
        }
        // The frame owns the memory from here, so that a failure below frees it.
        let frame = Frame(adopting: base, count: length)
        buffer.consume(buffered)
        var received = buffered
        while received < length {
            let got = recv(descriptor, base + received, length - received, 0)
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw .system("receive", errno) }
            if got == 0 { throw .protocolViolation("the connection ended inside a frame") }
            received += got
        }
        return frame
    }

    private func fill(_ buffer: inout ReadBuffer, to count: Int, polling: Duration) throws(ServiceWireError) -> Bool {
        if buffer.end - buffer.start >= count { return true }
        if buffer.start > 0 {
            buffer.storage.withUnsafeMutableBytes { raw in
                raw.baseAddress!.copyMemory(from: raw.baseAddress! + buffer.start, byteCount: buffer.end - buffer.start)
            }
            buffer.end -= buffer.start
            buffer.start = 0
        }
        if buffer.storage.count < count {
            let room = max(count, Self.keptBuffer)
            buffer.storage.append(contentsOf: repeatElement(0, count: room - buffer.storage.count))
        }
        let pollUntil = polling > .zero ? MonotonicClock.now + polling : nil
        while buffer.end < count {
            let polls = pollUntil.map { MonotonicClock.now < $0 } ?? false
            let end = buffer.end
            let got = buffer.storage.withUnsafeMutableBytes { raw in
                recv(descriptor, raw.baseAddress! + end, raw.count - end, polls ? Int32(MSG_DONTWAIT) : 0)
            }
            if got < 0 {
                if errno == EINTR || (polls && (errno == EAGAIN || errno == EWOULDBLOCK)) { continue }
                throw .system("receive", errno)
            }
            if got == 0 {
                if end == 0 { return false }
                throw .protocolViolation("the connection ended inside a frame")
            }
            buffer.end += got
        }
        return true
    }

    /// Ends the connection both ways: a blocked `receive` returns nil, later sends fail.
    public func close() {
        shutdown(descriptor, Int32(SHUT_RDWR))
    }
}

public enum ServiceWireError: Error, CustomStringConvertible {
    case system(String, Int32)
    case protocolViolation(String)

    public var description: String {
        switch self {
        case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
        case .protocolViolation(let message): message
        }
    }
}
