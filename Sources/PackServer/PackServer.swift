import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PackAuthoring
import Packs
import Synchronization
import Vocabulary

/// `bahost serve`: Apple's `ba-serve`, a mock server for testing managed asset packs locally. Over HTTPS only, as
/// Apple's, it serves the download manifest of the packs it was given at `/download-manifest.json` and each pack's
/// archive at the base URL followed by its ID, with `Range`, `If-Range` and `HEAD`, so that resumes can be tried.
///
/// Built on swift-nio (HTTP/1.1 and NIOSSL), which bahost already uses for its transfers: a file server this small
/// does not earn a web framework's build time.
public final class PackServer: Sendable {
    /// One pack as it is served.
    struct Served: Sendable {
        let path: String
        let size: Int64
        let etag: String
    }

    /// What the server offers; the manifest is made once the port is known.
    final class Catalog: Sendable {
        let packs: [String: Served]
        let manifest = Mutex(Data())
        /// Where each pack's files are, one per content (`PACK-ID.files/SHA-256`): updates fetch only what changed.
        let fileObjects: URL

        init(packs: [String: Served], fileObjects: URL) {
            self.packs = packs
            self.fileObjects = fileObjects
        }
    }

    public let baseURL: String
    public let manifest: DownloadManifest
    private let channel: any Channel
    private let fileObjects: URL

    /// Binds `host:port` (0: any free port) and starts serving `archives`.
    /// - Parameter log: one line per request, with everything the client sent escaped.
    public static func start(
        host: String, port: Int, certificate: String, key: String, archives: [String],
        log: @escaping @Sendable (String) -> Void
    ) async throws -> PackServer {
        let indexes = try archives.map { archive throws(PackError) in (archive, try PackArchive.readIndex(archive)) }
        var packs: [String: Served] = [:]
        for (archive, index) in indexes {
            let (size, hash) = try PackArchive.hashFile(URL(fileURLWithPath: archive))
            guard packs.updateValue(Served(path: archive, size: size, etag: "\"\(hash)\""), forKey: index.manifest.assetPackID) == nil
            else { throw PackError.invalidManifest("the pack '\(index.manifest.assetPackID)' is named twice") }
        }
        let fileObjects = FileManager.default.temporaryDirectory.appendingPathComponent("bahost-serve-\(UUID().uuidString)")
        let catalog = Catalog(packs: packs, fileObjects: fileObjects)
        let tls = try NIOSSLContext(configuration: .makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
            privateKey: .privateKey(try Self.privateKey(key))))
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(RequestHandler(catalog: catalog, log: log))
                }
            }
            .bind(host: host, port: port).get()
        let boundPort = channel.localAddress?.port ?? port
        let hostPart = host.contains(":") ? "[\(host)]" : host
        let baseURL = "https://\(hostPart):\(boundPort)/"
        let manifest = try DownloadManifest.create(
            archives: archives, baseURL: baseURL, previous: nil, fileObjects: fileObjects)
        catalog.manifest.withLock { $0 = (try? manifest.encoded()) ?? Data() }
        return PackServer(baseURL: baseURL, manifest: manifest, channel: channel, fileObjects: fileObjects)
    }

    /// A PEM or DER key, whatever its file's extension (NIOSSL would take `.key` for DER).
    static func privateKey(_ path: String) throws -> NIOSSLPrivateKey {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let isPEM = String(decoding: bytes.prefix(4096), as: UTF8.self).contains("-----BEGIN")
        return try NIOSSLPrivateKey(bytes: bytes, format: isPEM ? .pem : .der)
    }

    private init(baseURL: String, manifest: DownloadManifest, channel: any Channel, fileObjects: URL) {
        self.baseURL = baseURL
        self.manifest = manifest
        self.channel = channel
        self.fileObjects = fileObjects
    }

    /// The URL of the download manifest: what an app's `BAManifestURL` (or `bahost debug url-override`) names.
    public var manifestURL: String { baseURL + "download-manifest.json" }

    /// Serves until the server is closed.
    public func wait() async throws { try await channel.closeFuture.get() }

    public func close() async throws {
        try await channel.close()
        try? FileManager.default.removeItem(at: fileObjects)
    }
}

/// Answers one connection's requests in order.
final class RequestHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let catalog: PackServer.Catalog
    private let log: @Sendable (String) -> Void
    private var head: HTTPRequestHead?

    init(catalog: PackServer.Catalog, log: @escaping @Sendable (String) -> Void) {
        self.catalog = catalog
        self.log = log
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request): head = request
        case .body: break
        case .end:
            guard let request = head else { return }
            respond(to: request, context: context)
        }
    }

    private func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = String(request.uri.split(separator: "?", maxSplits: 1).first ?? "")
        let line = "\(request.method) \(path.printable(limit: 200))"
        guard request.method == .GET || request.method == .HEAD else {
            return send(.methodNotAllowed, body: "GET or HEAD only\n", request: request, context: context, log: line)
        }
        if path == "/download-manifest.json" {
            let manifest = catalog.manifest.withLock { $0 }
            return send(.ok, body: manifest, type: "application/json", request: request, context: context, log: line)
        }
        if let object = fileObject(path) { return servePack(object, request: request, context: context, log: line) }
        guard path.hasPrefix("/"), let pack = catalog.packs[String(path.dropFirst())] else {
            return send(.notFound, body: "no such pack\n", request: request, context: context, log: line)
        }
        servePack(pack, request: request, context: context, log: line)
    }

    /// `/PACK-ID.files/SHA-256`: one file of a pack, by content.
    private func fileObject(_ path: String) -> PackServer.Served? {
        let parts = path.split(separator: "/")
        guard parts.count == 2, parts[0].hasSuffix(".files"), catalog.packs[String(parts[0].dropLast(6))] != nil,
            parts[1].count == 64, parts[1].allSatisfy(\.isHexDigit)
        else { return nil }
        let file = catalog.fileObjects.appendingPathComponent("\(parts[0])/\(parts[1])").path
        guard let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size]) as? Int64 else { return nil }
        return PackServer.Served(path: file, size: size, etag: "\"\(parts[1])\"")
    }

    private func servePack(_ pack: PackServer.Served, request: HTTPRequestHead, context: ChannelHandlerContext, log line: String) {
        var headers = HTTPHeaders([
            ("Content-Type", "application/zstd"), ("Accept-Ranges", "bytes"), ("ETag", pack.etag),
        ])
        var status = HTTPResponseStatus.ok
        var range = 0..<pack.size
        let ifRange = request.headers.first(name: "If-Range")
        if let asked = request.headers.first(name: "Range"), ifRange == nil || ifRange == pack.etag {
            switch Self.byteRange(asked, size: pack.size) {
            case .whole:
                break
            case .part(let part):
                status = .partialContent
                range = part
                headers.add(name: "Content-Range", value: "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(pack.size)")
            case .unsatisfiable:
                headers.add(name: "Content-Range", value: "bytes */\(pack.size)")
                return send(.rangeNotSatisfiable, body: "", headers: headers, request: request, context: context, log: line)
            }
        }
        headers.add(name: "Content-Length", value: "\(range.count)")
        keepAlive(request, &headers)
        log("\(line) \(status.code) \(range.count) bytes from \(range.lowerBound)")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        guard request.method == .GET, !range.isEmpty else { return finish(request, context: context) }
        guard let file = FileHandle(forReadingAtPath: pack.path) else {
            context.close(promise: nil)
            return
        }
        stream(file, from: range.lowerBound, to: range.upperBound, request: request, context: context)
    }

    /// Reads the file on NIO's thread pool, 256 KiB at a time, and writes each piece once the last one was taken.
    private func stream(_ file: FileHandle, from offset: Int64, to end: Int64, request: HTTPRequestHead, context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
        let reader = UncheckedFile(handle: file)
        let count = Int(min(256 << 10, end - offset))
        NIOThreadPool.singleton.runIfActive(eventLoop: loop) { () throws -> Data in
            try reader.handle.seek(toOffset: UInt64(offset))
            return try reader.handle.read(upToCount: count) ?? Data()
        }.flatMap { data -> EventLoopFuture<Int> in
            guard !data.isEmpty else { return loop.makeFailedFuture(ChannelError.eof) }
            let (handler, context) = bound.value
            return context.writeAndFlush(handler.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: data)))))
                .map { data.count }
        }.whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case .success(let written) where offset + Int64(written) < end:
                handler.stream(reader.handle, from: offset + Int64(written), to: end, request: request, context: context)
            case .success:
                try? reader.handle.close()
                handler.finish(request, context: context)
            case .failure:
                try? reader.handle.close()
                context.close(promise: nil)
            }
        }
    }

    private func send(
        _ status: HTTPResponseStatus, body: String, headers: HTTPHeaders = [:], request: HTTPRequestHead,
        context: ChannelHandlerContext, log line: String
    ) {
        send(status, body: Data(body.utf8), type: "text/plain", headers: headers, request: request, context: context, log: line)
    }

    private func send(
        _ status: HTTPResponseStatus, body: Data, type: String, headers: HTTPHeaders = [:], request: HTTPRequestHead,
        context: ChannelHandlerContext, log line: String
    ) {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: type)
        headers.replaceOrAdd(name: "Content-Length", value: "\(body.count)")
        keepAlive(request, &headers)
        log("\(line) \(status.code)")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        if request.method == .GET, !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        }
        finish(request, context: context)
    }

    private func keepAlive(_ request: HTTPRequestHead, _ headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: "Connection", value: request.isKeepAlive ? "keep-alive" : "close")
    }

    private func finish(_ request: HTTPRequestHead, context: ChannelHandlerContext) {
        let keepAlive = request.isKeepAlive
        // The write completes on the context's event loop, where the context may be used.
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { bound.value.close(promise: nil) }
        }
    }

    enum ByteRange: Equatable {
        case whole
        case part(Range<Int64>)
        case unsatisfiable
    }

    /// One `bytes=` range (`a-b`, `a-`, `-n`) of a file of `size` bytes. Several ranges, or a header this server
    /// does not read, get the whole file, as RFC 9110 allows.
    static func byteRange(_ header: String, size: Int64) -> ByteRange {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return .whole }
        let bounds = header.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2 else { return .whole }
        let first = Int64(bounds[0].trimmingCharacters(in: .whitespaces))
        let last = Int64(bounds[1].trimmingCharacters(in: .whitespaces))
        switch (first, last) {
        case (let first?, let last) where first < size:
            let end = min(last.map { $0 + 1 } ?? size, size)
            return first < end ? .part(first..<end) : .unsatisfiable
        case (nil, let suffix?) where suffix > 0 && size > 0:
            return .part(max(0, size - suffix)..<size)
        case (.some, _), (nil, .some):
            return .unsatisfiable
        default:
            return .whole
        }
    }
}

/// A file read by one thread-pool job at a time, in turn: never concurrently.
private struct UncheckedFile: @unchecked Sendable {
    let handle: FileHandle
}
