import Glibc
import Vocabulary

/// The frames of the messages exchanged most (an app's schedule, cancel, fetch, their replies, the delegate's events
/// and completions; the progress lines a following command line gets) in a compact binary form; every other message is JSON. A binary frame starts with byte 0x01,
/// which no JSON text does.
///
/// Why not JSON for these too: JSON coders cost tens of microseconds for one download, which made a
/// `scheduleDownload` round trip and a `fetchCurrentDownloads` of thousands mostly encoding (Benchmarks). The form is
/// small enough to write by hand: fixed-width little-endian integers, strings as a 64-bit length and UTF-8 bytes,
/// optionals behind a presence byte. The reader checks every length against what is left of the frame.
extension ServiceProtocol {
    static let compactTag: UInt8 = 0x01

    public static func encode(_ message: ClientMessage) throws -> Frame {
        if let compact = CompactWriter.encode(message) { return compact }
        return Frame(try WireJSON.encode(message))
    }

    public static func encode(_ message: ServiceMessage) throws -> Frame {
        if let compact = CompactWriter.encode(message) { return compact }
        return Frame(try WireJSON.encode(message))
    }

    public static func decodeClientMessage(_ frame: some Collection<UInt8>) throws -> ClientMessage {
        try frame.withContiguousBytes { bytes in
            guard bytes.first == compactTag else { return try WireJSON.decode(ClientMessage.self, from: bytes) }
            var reader = CompactReader(bytes)
            return try reader.clientMessage()
        }
    }

    public static func decodeServiceMessage(_ frame: some Collection<UInt8>) throws -> ServiceMessage {
        try frame.withContiguousBytes { bytes in
            guard bytes.first == compactTag else { return try WireJSON.decode(ServiceMessage.self, from: bytes) }
            var reader = CompactReader(bytes)
            return try reader.serviceMessage()
        }
    }
}

/// What a compact frame holds, after the tag.
enum CompactKind: UInt8 {
    case schedule = 1, startForeground, cancel, currentDownloads, setDelegate
    case replyOK = 16, replyDownloads, replyFailure
    case began = 32, paused, progress
    case finished = 48, failed
    case progressLine = 64
}

/// Writes a compact frame; each field method returns the writer, so that a download reads as one chain. The frame is
/// written into memory of its own, which becomes the `Frame` without a copy; a reply to a fetch is sized before it is
/// written, so that a large reply is neither moved by growth nor copied (DECISIONS.md #38). Hand-written rather
/// than an `[UInt8]`: an array cannot become a `Frame` without a copy. `malloc` rather than Swift's allocation, for
/// `realloc`: a large buffer that grows is remapped by the kernel, not copied (`DownloadsReply.Builder` cannot size
/// its buffer before it has read the queue's rows).
///
/// Its fields are not checked for exclusive access at run time: a writer is written by one thread, one field method
/// at a time, and the checks were a large part of the service's CPU in a long reply (DECISIONS.md #38).
final class CompactWriter {
    @exclusivity(unchecked) private var base: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var capacity: Int
    /// Bytes written, the tag included.
    @exclusivity(unchecked) private(set) var used = 0
    /// Whether `finish` gave the memory to a `Frame`.
    private var handedOver = false

    init(capacity: Int = 256) {
        self.capacity = capacity
        base = Self.reallocate(nil, capacity)
        byte(ServiceProtocol.compactTag)
    }

    deinit { if !handedOver { free(base) } }

    private static func reallocate(_ memory: UnsafeMutableRawPointer?, _ count: Int) -> UnsafeMutableRawPointer {
        guard let memory = realloc(memory, count) else { fatalError("out of memory: \(count) bytes for a frame") }
        return memory
    }

    static func encode(_ message: ClientMessage) -> Frame? {
        guard case .request(let id, let request) = message else { return nil }
        let writer = CompactWriter()
        switch request {
        case .schedule(let download): writer.header(.schedule, id).download(download)
        case .startForeground(let download): writer.header(.startForeground, id).download(download)
        case .cancel(let download): writer.header(.cancel, id).download(download)
        case .currentDownloads: writer.header(.currentDownloads, id)
        case .setDelegate(let set): writer.header(.setDelegate, id).bool(set)
        default: return nil
        }
        return writer.finish()
    }

    static func encode(_ message: ServiceMessage) -> Frame? {
        let writer: CompactWriter
        switch message {
        case .reply(let id, .ok): writer = CompactWriter().header(.replyOK, id)
        case .reply(let id, .downloads(let downloads)):
            writer = CompactWriter(capacity: 1 + 9 + 8 + downloads.reduce(0) { $0 + size(of: $1) })
            writer.header(.replyDownloads, id).count(downloads.count)
            for download in downloads { writer.download(download) }
            assert(writer.used == writer.capacity, "size(of:) does not match download(_:)")
        case .reply(let id, .failure(let error)): writer = CompactWriter().header(.replyFailure, id).error(error)
        case .event(.began(let download)): writer = CompactWriter().header(.began, 0).download(download)
        case .event(.paused(let download)): writer = CompactWriter().header(.paused, 0).download(download)
        case .event(.progress(let download, let written, let total, let expected)):
            writer = CompactWriter().header(.progress, 0).download(download).int(written).int(total).int(expected)
        case .callback(let id, .finished(let download, let path)):
            writer = CompactWriter().header(.finished, id).download(download).string(path)
        case .callback(let id, .failed(let download, let error, let ticket)):
            writer = CompactWriter().header(.failed, id).download(download).error(error).string(ticket)
        case .progress(let id, let line):
            writer = CompactWriter().header(.progressLine, id).optional(line.text).string(line.json)
        default: return nil
        }
        return writer.finish()
    }

    /// The bytes `download` writes: what `download(_:)` below writes, field by field.
    private static func size(of d: Download) -> Int {
        func string(_ text: String) -> Int { 8 + text.utf8.count }
        func optional(_ text: String?) -> Int { 1 + (text.map(string) ?? 0) }
        return d.httpHeaders.reduce(8 + string(d.identifier) + optional(d.uniqueIdentifier) + optional(d.url)
            + string(d.applicationGroupIdentifier) + 8 + 8 + 8 + 1 + optional(d.sha256) + 8 + 8) { $0 + string($1) }
    }

    /// The frame, owning the writer's memory.
    func finish() -> Frame {
        handedOver = true
        return Frame(adopting: base, count: used)
    }

    // The field methods are inlined into a frame's writing: called one by one, each returned the writer retained,
    // and a long reply spent much of the service's CPU on those retains and releases (DECISIONS.md #38).
    @inline(__always)
    private func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        if used + bytes.count > capacity { grow(toHold: bytes.count) }
        (base + used).copyMemory(from: source, byteCount: bytes.count)
        used += bytes.count
    }

    private func grow(toHold count: Int) {
        capacity = max(capacity * 2, used + count)
        base = Self.reallocate(base, capacity)
    }

    /// Bytes `range` of what `other` wrote, as they are.
    func copy(_ range: Range<Int>, of other: CompactWriter) {
        append(UnsafeRawBufferPointer(start: other.base + range.lowerBound, count: range.count))
    }

    @discardableResult @inline(__always)
    private func byte(_ value: UInt8) -> Self {
        withUnsafeBytes(of: value) { append($0) }
        return self
    }

    @discardableResult
    func header(_ kind: CompactKind, _ id: UInt64) -> Self {
        byte(kind.rawValue).int(Int64(bitPattern: id))
    }

    @discardableResult @inline(__always)
    func int(_ value: Int64) -> Self {
        withUnsafeBytes(of: value.littleEndian) { append($0) }
        return self
    }

    @discardableResult @inline(__always)
    func count(_ value: Int) -> Self { int(Int64(value)) }

    @discardableResult @inline(__always)
    func bool(_ value: Bool) -> Self { byte(value ? 1 : 0) }

    @discardableResult @inline(__always)
    func string(_ value: String) -> Self {
        var value = value
        return value.withUTF8 { utf8($0) }
    }

    /// Text given as its UTF-8 bytes, written as `string` writes it.
    @discardableResult @inline(__always)
    func utf8(_ bytes: UnsafeBufferPointer<UInt8>) -> Self {
        count(bytes.count)
        append(UnsafeRawBufferPointer(bytes))
        return self
    }

    @discardableResult @inline(__always)
    func optionalUTF8(_ bytes: UnsafeBufferPointer<UInt8>?) -> Self {
        guard let bytes else { return bool(false) }
        return bool(true).utf8(bytes)
    }

    @discardableResult @inline(__always)
    func optional(_ value: String?) -> Self {
        guard let value else { return bool(false) }
        return bool(true).string(value)
    }

    @discardableResult
    func download(_ d: Download) -> Self {
        int(Int64(d.kind.rawValue)).string(d.identifier).optional(d.uniqueIdentifier).optional(d.url)
            .string(d.applicationGroupIdentifier).int(d.fileSize).int(d.priority).int(Int64(d.state))
            .bool(d.isEssential).optional(d.sha256).count(d.httpHeaders.count)
        for header in d.httpHeaders { string(header) }
        return int(Int64(d.networkAccess.rawValue))
    }

    /// A download read in place, written field for field as `download(_:)` writes its value.
    @discardableResult
    func download(_ d: DownloadInPlace) -> Self {
        int(Int64(d.kind.rawValue)).utf8(d.identifier).optionalUTF8(d.uniqueIdentifier).optionalUTF8(d.url)
            .utf8(d.applicationGroupIdentifier).int(d.fileSize).int(d.priority).int(Int64(d.state))
            .bool(d.isEssential).optionalUTF8(d.sha256).count(d.httpHeaders.count)
        for header in d.httpHeaders { string(header) }
        return int(Int64(d.networkAccess.rawValue))
    }

    @discardableResult
    func error(_ e: HostError) -> Self { int(e.code).string(e.domain).string(e.message) }
}

/// Reads a compact frame, refusing any length that runs past its end. It reads the frame in place, while its bytes
/// are lent: a long reply copied pays its page faults again (DECISIONS.md #39).
struct CompactReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var offset = 1

    init(_ frame: UnsafeBufferPointer<UInt8>) { bytes = frame }

    mutating func clientMessage() throws -> ClientMessage {
        let (kind, id) = try header()
        let request: ServiceRequest
        switch kind {
        case .schedule: request = .schedule(try download())
        case .startForeground: request = .startForeground(try download())
        case .cancel: request = .cancel(try download())
        case .currentDownloads: request = .currentDownloads
        case .setDelegate: request = .setDelegate(try bool())
        default: throw ServiceWireError.protocolViolation("a compact frame of kind \(kind) is not a client message")
        }
        try end()
        return .request(id: id, request)
    }

    mutating func serviceMessage() throws -> ServiceMessage {
        let (kind, id) = try header()
        let message: ServiceMessage
        switch kind {
        case .replyOK: message = .reply(id: id, .ok)
        case .replyDownloads:
            // Each download takes at least 40 bytes: a count beyond what the frame can hold is a lie.
            let count = try self.count(each: 40)
            var downloads: [Download] = []
            downloads.reserveCapacity(count)
            for _ in 0..<count { downloads.append(try download()) }
            message = .reply(id: id, .downloads(downloads))
        case .replyFailure: message = .reply(id: id, .failure(try error()))
        case .began: message = .event(.began(try download()))
        case .paused: message = .event(.paused(try download()))
        case .progress:
            message = .event(.progress(
                try download(), bytesWritten: try int(), totalBytesWritten: try int(), totalBytesExpected: try int()))
        case .finished: message = .callback(id: id, .finished(try download(), filePath: try string()))
        case .failed: message = .callback(id: id, .failed(try download(), try error(), ticket: try string()))
        case .progressLine: message = .progress(id: id, ProgressLine(text: try optional(), json: try string()))
        default: throw ServiceWireError.protocolViolation("a compact frame of kind \(kind) is not a service message")
        }
        try end()
        return message
    }

    mutating func header() throws -> (CompactKind, UInt64) {
        let raw = try byte()
        guard let kind = CompactKind(rawValue: raw) else {
            throw ServiceWireError.protocolViolation("unknown compact frame kind \(raw)")
        }
        return (kind, UInt64(bitPattern: try int()))
    }

    mutating func end() throws {
        guard offset == bytes.count else {
            throw ServiceWireError.protocolViolation("\(bytes.count - offset) bytes after the end of a compact frame")
        }
    }

    /// The next `count` bytes, checked against what is left of the frame.
    private mutating func take(_ count: Int) throws -> UnsafeBufferPointer<UInt8> {
        guard count >= 0, count <= bytes.count - offset else {
            throw ServiceWireError.protocolViolation("a compact frame ends inside a field")
        }
        defer { offset += count }
        return UnsafeBufferPointer(rebasing: bytes[offset..<offset + count])
    }

    private mutating func byte() throws -> UInt8 {
        try take(1)[0]
    }

    private mutating func int() throws -> Int64 {
        Int64(littleEndian: UnsafeRawBufferPointer(try take(8)).loadUnaligned(as: Int64.self))
    }

    private mutating func int32() throws -> Int32 {
        let value = try int()
        guard let narrow = Int32(exactly: value) else {
            throw ServiceWireError.protocolViolation("\(value) does not fit a 32-bit field")
        }
        return narrow
    }

    /// A count of items that each take at least `each` bytes of what is left.
    mutating func count(each: Int) throws -> Int {
        let value = try int()
        guard value >= 0, value <= (bytes.count - offset) / each else {
            throw ServiceWireError.protocolViolation("a count of \(value) does not fit the frame")
        }
        return Int(value)
    }

    private mutating func bool() throws -> Bool {
        switch try byte() {
        case 0: return false
        case 1: return true
        case let other: throw ServiceWireError.protocolViolation("\(other) is not a boolean")
        }
    }

    private mutating func string() throws -> String {
        String(decoding: try utf8(), as: UTF8.self)
    }

    /// A string's bytes in place, checked to be UTF-8.
    private mutating func utf8() throws -> UnsafeBufferPointer<UInt8> {
        let bytes = try take(try count(each: 1))
        // Text all ASCII (identifiers, URLs) is valid as it is, and checked without `String(validating:)`, which
        // looks up generic metadata at each call (a tenth of an app's fetch of 10,000). An OR of every byte, not a
        // search for the first high one: a loop without an early exit is one the compiler vectorizes.
        if bytes.reduce(0, |) >= 0x80 && String(validating: bytes, as: UTF8.self) == nil {
            throw ServiceWireError.protocolViolation("a string is not UTF-8")
        }
        return bytes
    }

    private mutating func optional() throws -> String? {
        try bool() ? try string() : nil
    }

    private mutating func optionalUTF8() throws -> UnsafeBufferPointer<UInt8>? {
        try bool() ? try utf8() : nil
    }

    private mutating func download() throws -> Download {
        try downloadInPlace().download
    }

    /// A download read in place: every length checked, every string checked to be UTF-8; its header lines made
    /// strings (few downloads have any).
    mutating func downloadInPlace() throws -> DownloadInPlace {
        guard let kind = Download.Kind(rawValue: try int32()) else {
            throw ServiceWireError.protocolViolation("compact frame: unknown download kind")
        }
        let identifier = try utf8()
        let uniqueIdentifier = try optionalUTF8()
        let url = try optionalUTF8()
        let group = try utf8()
        let fileSize = try int()
        let priority = try int()
        let state = try int32()
        let isEssential = try bool()
        let sha256 = try optionalUTF8()
        let headerCount = try count(each: 8)
        var headers: [String] = []
        if headerCount > 0 {
            headers.reserveCapacity(headerCount)
            for _ in 0..<headerCount { headers.append(try string()) }
        }
        // Only the bits this version knows: one it would drop could not be written again as it came.
        guard let networkAccess = NetworkAccess(exactly: try int()) else {
            throw ServiceWireError.protocolViolation("compact frame: unknown network access bits")
        }
        return DownloadInPlace(
            kind: kind, identifier: identifier, uniqueIdentifier: uniqueIdentifier, url: url,
            applicationGroupIdentifier: group, fileSize: fileSize, priority: priority, state: state,
            isEssential: isEssential, sha256: sha256, httpHeaders: headers,
            networkAccess: networkAccess)
    }

    private mutating func error() throws -> HostError {
        HostError(code: try int(), domain: try string(), message: try string())
    }
}
