import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// An HTTP/1.1 server of the tests' own, for what nginx cannot be made to do. Each path answers from a script of
/// faults, one per request, then normally: 200, or 206 for `Range` (honouring `If-Range` against its ETag).
/// Every request is recorded, by its path without the query.
public final class FaultServer: Sendable {
    public enum Fault: Sendable {
        /// The normal headers, `afterBytes` of the body, then a TCP reset.
        case reset(afterBytes: Int)
        /// The normal headers, `afterBytes` of the body, then a clean close: a truncated body.
        case truncate(afterBytes: Int)
        /// An empty response with this status (and `Retry-After`).
        case status(Int, retryAfter: String?)
        /// 200 with this Content-Length and as many bytes.
        case wrongLength(Int)
        /// 200 with the whole file, whatever Range asked.
        case ignoreRange
        /// The file changes (a new ETag) before this request is answered.
        case replace(Data)
        /// 302 to this URL.
        case redirect(String)
        /// The normal response, `chunk` bytes at a time, `every` apart.
        case trickle(chunk: Int, every: Duration)
        /// 200, then header lines of 1 KB to `bytes` in all, never the blank line that ends the head, then a close.
        case headerFlood(bytes: Int)
    }

    public struct Request: Sendable {
        public var path: String
        public var range: String?
        public var ifRange: String?
        /// Every header, by lowercased name (the last of a repeated one).
        public var headers: [String: String] = [:]
    }

    struct Entry {
        var data: Data
        var etag: String
        var faults: [Fault]
    }

    public let port: Int
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let state = Mutex<(entries: [String: Entry], requests: [Request])>(([:], []))

    public init() throws {
        let box = Mutex<FaultServer?>(nil)
        let channel = try ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.addHandler(FaultHandler(server: { box.withLock { $0 } }))
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        port = channel.localAddress!.port!
        box.withLock { $0 = self }
    }

    /// Serves `data` at `path`, answering the next requests with `faults`, one each, then normally.
    public func serve(_ data: Data, at path: String, faults: [Fault] = []) {
        state.withLock { $0.entries[path] = Entry(data: data, etag: Self.etag(data), faults: faults) }
    }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

    public func requests(for path: String) -> [Request] {
        state.withLock { $0.requests.filter { $0.path == path } }
    }

    public static func etag(_ data: Data) -> String {
        var hash: UInt64 = 1469598103934665603
        for byte in data { hash = (hash ^ UInt64(byte)) &* 1099511628211 }
        return "\"\(data.count)-\(String(hash, radix: 16))\""
    }
}

private final class FaultHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let server: () -> FaultServer?
    var received = ""
    var answered = false

    init(server: @escaping () -> FaultServer?) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received += buffer.readString(length: buffer.readableBytes) ?? ""
        guard !answered, let end = received.range(of: "\r\n\r\n"), let server = server() else { return }
        answered = true
        let lines = received[..<end.lowerBound].split(separator: "\r\n").map(String.init)
        let target = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        // Matched without the query, as a file server does: the scheduler's tests tell apart requests for the same
        // file by one (they were answered 404, which ended "slow" transfers at once and made those tests racy).
        let path = String(target.dropFirst().prefix { $0 != "?" })
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let (entry, fault) = server.state.withLock { state -> (FaultServer.Entry?, FaultServer.Fault?) in
            state.requests.append(
                FaultServer.Request(path: path, range: headers["range"], ifRange: headers["if-range"], headers: headers))
            guard var entry = state.entries[path] else { return (nil, nil) }
            let fault = entry.faults.isEmpty ? nil : entry.faults.removeFirst()
            if case .replace(let data)? = fault {
                entry.data = data
                entry.etag = FaultServer.etag(data)
            }
            state.entries[path] = entry
            return (entry, fault)
        }
        respond(context, entry: entry, fault: fault, range: headers["range"], ifRange: headers["if-range"])
    }

    private func respond(
        _ context: ChannelHandlerContext, entry: FaultServer.Entry?, fault: FaultServer.Fault?, range: String?,
        ifRange: String?
    ) {
        guard let entry else { return send(context, head(404, ["Content-Length": "0"]), body: Data(), then: .close) }
        switch fault {
        case .status(let code, let retryAfter)?:
            var extra = ["Content-Length": "0"]
            if let retryAfter { extra["Retry-After"] = retryAfter }
            return send(context, head(code, extra), body: Data(), then: .close)
        case .redirect(let location)?:
            return send(context, head(302, ["Location": location, "Content-Length": "0"]), body: Data(), then: .close)
        case .headerFlood(let bytes)?:
            let line = "X-Flood: \(String(repeating: "a", count: 1014))\r\n"
            let lines = String(repeating: line, count: max(1, bytes / line.utf8.count))
            return send(context, Data("HTTP/1.1 200 Fault\r\n\(lines)".utf8), body: Data(), then: .close)
        case .wrongLength(let length)?:
            let body = Data(repeating: 0x61, count: length)
            return send(context, head(200, ["Content-Length": "\(length)", "ETag": entry.etag]), body: body, then: .close)
        default:
            break
        }
        var start = 0
        var status = 200
        if case .ignoreRange? = fault {
        } else if let range, range.hasPrefix("bytes="), range.hasSuffix("-"),
            let from = Int(range.dropFirst(6).dropLast()), ifRange == nil || ifRange == entry.etag
        {
            guard from < entry.data.count else {
                return send(context, head(416, ["Content-Range": "bytes */\(entry.data.count)", "Content-Length": "0"]), body: Data(), then: .close)
            }
            start = from
            status = 206
        }
        let body = entry.data.subdata(in: start..<entry.data.count)
        var extra = ["Content-Length": "\(body.count)", "ETag": entry.etag]
        if status == 206 { extra["Content-Range"] = "bytes \(start)-\(entry.data.count - 1)/\(entry.data.count)" }
        let header = head(status, extra)
        switch fault {
        case .reset(let bytes)?: send(context, header, body: body.prefix(bytes), then: .reset)
        case .truncate(let bytes)?: send(context, header, body: body.prefix(bytes), then: .close)
        case .trickle(let chunk, let every)?: trickle(context, header: header, body: body, chunk: chunk, every: every)
        default: send(context, header, body: body, then: .close)
        }
    }

    private enum Ending { case close, reset }

    private func head(_ status: Int, _ headers: [String: String]) -> Data {
        var text = "HTTP/1.1 \(status) Fault\r\nConnection: close\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return Data((text + "\r\n").utf8)
    }

    private func send(_ context: ChannelHandlerContext, _ head: Data, body: Data, then ending: Ending) {
        let channel = context.channel
        channel.writeAndFlush(channel.allocator.buffer(bytes: head + body)).whenComplete { _ in
            // SO_LINGER 0 turns the close into a reset.
            if ending == .reset, let provider = channel as? SocketOptionProvider {
                provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
        }
    }

    private func trickle(_ context: ChannelHandlerContext, header: Data, body: Data, chunk: Int, every: Duration) {
        let channel = context.channel
        channel.writeAndFlush(channel.allocator.buffer(bytes: header), promise: nil)
        let pieces = stride(from: 0, to: body.count, by: chunk).map { body.subdata(in: $0..<min($0 + chunk, body.count)) }
        let nanos = every.components.seconds * 1_000_000_000 + every.components.attoseconds / 1_000_000_000
        for (index, piece) in pieces.enumerated() {
            channel.eventLoop.scheduleTask(in: .nanoseconds(nanos * Int64(index + 1))) {
                channel.writeAndFlush(channel.allocator.buffer(bytes: piece), promise: nil)
                if index == pieces.count - 1 { channel.close(promise: nil) }
            }
        }
    }
}
