import Foundation
import Synchronization

/// One end of a connection to the bahost service: a Unix stream socket carrying frames of a 4-byte big-endian
/// length followed by that many bytes of JSON.
///
/// Hand-written rather than built on SwiftNIO. The app's end lives in every app that links the SDK, which must stay
/// small, and its calls are synchronous, as Apple's API is. The service's end serves each connection on a thread of
/// its own, which reads a request, commits it and writes the reply with no hand-off: the same service on swift-nio's
/// async channels (peers checked through `SocketOptionProvider`) was measured at 325 to 352 µs a `scheduleDownload`
/// against 226 µs this way, on this project's 2-core benchmark machine (the README's Benchmarks section).
///
/// Thread rule: `send` from any thread (frames never interleave); `receive` from one reader thread at a time.
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

    /// Sends one frame.
    public func send(_ payload: Data) throws(ServiceWireError) {
        var length = UInt32(payload.count).bigEndian
        var frame = Data(bytes: &length, count: 4)
        frame.append(payload)
        let failure: Int32? = writeLock.withLock { _ in
            frame.withUnsafeBytes { raw -> Int32? in
                var offset = 0
                while offset < raw.count {
                    let written = Glibc.send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                    if written < 0 {
                        if errno == EINTR { continue }
                        return errno
                    }
                    offset += written
                }
                return nil
            }
        }
        if let failure { throw .system("send", failure) }
    }

    /// The next frame, or nil when the peer closed the connection.
    public func receive() throws(ServiceWireError) -> Data? {
        guard let header = try read(4) else { return nil }
        let length = header.withUnsafeBytes { Int(UInt32(bigEndian: $0.loadUnaligned(as: UInt32.self))) }
        guard length <= Self.maximumFrame else {
            throw .protocolViolation("a frame of \(length) bytes is over the limit of \(Self.maximumFrame)")
        }
        guard let body = try read(length) else { throw .protocolViolation("the connection ended inside a frame") }
        return body
    }

    private func read(_ count: Int) throws(ServiceWireError) -> Data? {
        var data = Data(count: count)
        var offset = 0
        while offset < count {
            let got = data.withUnsafeMutableBytes { raw in
                recv(descriptor, raw.baseAddress! + offset, count - offset, 0)
            }
            if got < 0 {
                if errno == EINTR { continue }
                throw .system("receive", errno)
            }
            if got == 0 {
                if offset == 0 { return nil }
                throw .protocolViolation("the connection ended inside a frame")
            }
            offset += got
        }
        return data
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
