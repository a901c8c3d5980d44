import Foundation
import Synchronization

/// A plain-HTTP server of the tests' own on loopback, for the silences a hostile or overloaded server keeps and nginx
/// cannot be made to: a TLS ClientHello is never answered (a plain-HTTP server on the port an `https` URL names), and
/// a request for a path marked `stall` never gets a response head. Other paths are served whole, one request a
/// connection. Each silent connection is held open until the client gives up. Counts what it saw.
public final class SilentServer: Sendable {
    public let port: Int
    private let listener: Int32
    private struct State {
        var files: [String: Data] = [:]
        var stalled: Set<String> = []
        var requests: [String] = []
        var tlsHellos = 0
        var closed = false
    }
    private let state = Mutex(State())

    public init() throws {
        port = try Nginx.freePort()
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard bound, listen(listener, 64) == 0 else {
            close(listener)
            throw POSIXError(.EADDRINUSE)
        }
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    public func serve(_ data: Data, at path: String) { state.withLock { $0.files[path] = data } }

    /// Requests for `path` are read and never answered.
    public func stall(at path: String) { state.withLock { _ = $0.stalled.insert(path) } }

    public func url(_ path: String, scheme: String = "http") -> String { "\(scheme)://127.0.0.1:\(port)\(path)" }

    /// How many requests for `path` arrived.
    public func requests(for path: String) -> Int { state.withLock { $0.requests.filter { $0 == path }.count } }

    /// How many TLS handshakes were begun (and left unanswered).
    public var tlsHellos: Int { state.withLock { $0.tlsHellos } }

    /// Stops accepting; held connections end as their clients give up.
    public func stop() {
        let first = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        if first { shutdown(listener, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                break
            }
            let thread = Thread { [self] in handle(connection) }
            thread.start()
        }
        close(listener)
    }

    private func handle(_ connection: Int32) {
        defer { close(connection) }
        var head = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let got = read(connection, &buffer, buffer.count)
            guard got > 0 else { return }
            head += buffer[0..<got]
            if head.first == 0x16 {
                // A TLS record: the ClientHello is never answered. Hold it until the client gives up.
                state.withLock { $0.tlsHellos += 1 }
                holdUntilClosed(connection)
                return
            }
            if let end = head.firstRange(of: Array("\r\n\r\n".utf8)) {
                head.removeSubrange(end.lowerBound...)
                break
            }
            guard head.count < 64 << 10 else { return }
        }
        let requestLine = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        let path = requestLine.count > 1 ? String(requestLine[1]) : ""
        let (stalled, body) = state.withLock { state in
            state.requests.append(path)
            return (state.stalled.contains(path), state.files[path])
        }
        if stalled { return holdUntilClosed(connection) }
        let response = body.map {
            "HTTP/1.1 200 OK\r\nContent-Length: \($0.count)\r\nConnection: close\r\n\r\n"
        } ?? "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        let bytes = Array(response.utf8) + Array(body ?? Data())
        var sent = 0
        while sent < bytes.count {
            let wrote = bytes[sent...].withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            guard wrote > 0 else { return }
            sent += wrote
        }
    }

    /// Reads and drops what the client sends until it closes the connection.
    private func holdUntilClosed(_ connection: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while read(connection, &buffer, buffer.count) > 0 {}
    }
}
