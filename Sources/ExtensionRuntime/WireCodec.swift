import CBAExtension
import ExtensionWire

#if canImport(Glibc)
import Glibc
import Vocabulary
#endif

/// A packet from the runner that cannot be what the protocol says: the extension wrote garbage.
struct WireViolation: Error {
    var message: String
}

/// What one host function call from the extension asks for.
enum HostCall {
    case schedule(Download)
    case startForeground(Download)
    case cancel(Download)
    case fetchCurrentDownloads
    case acquireExclusiveControl(timeoutMilliseconds: Int64)
    case releaseExclusiveControl
}

/// One packet from the runner, decoded and checked.
enum RunnerMessage {
    case hello(abiMajor: UInt32, abiMinor: UInt32, identifier: String?)
    case loadFailed(LoadFailure, String)
    /// One or more elements of the set a content request returns, in the order the extension added them.
    case downloads(eventID: UInt32, [Download])
    case eventDone(eventID: UInt32)
    /// What `should_download_asset_pack` returned for this event.
    case answer(eventID: UInt32, Bool)
    /// How the extension answered this event's challenge.
    case challengeAnswer(eventID: UInt32, ChallengeAnswer)
    /// This event's finished file was still in place when its entry point returned.
    case fileLeft(eventID: UInt32)
    case call(id: UInt32, HostCall)
    /// One or more log messages (level, text), in the order the extension logged them.
    case log([(level: Int32, text: String)])
    case violation(String)
    case terminateDone
    /// What the sandbox applied, before the extension was loaded.
    case sandbox(String)
    /// The runner's own failure, just before it exits.
    case runnerFailed(String)

    /// Decodes `packet`; anything short, long, unknown or not UTF-8 is a `WireViolation`.
    static func decode(_ packet: UnsafeRawBufferPointer) throws(WireViolation) -> RunnerMessage {
        guard let type = packet.first else { throw WireViolation(message: "the extension sent an empty packet") }
        var reader = WireReader(UnsafeRawBufferPointer(rebasing: packet.dropFirst()))
        let message: RunnerMessage
        switch UInt32(type) {
        case BA_WIRE_HELLO.rawValue:
            message = .hello(abiMajor: try reader.u32(), abiMinor: try reader.u32(), identifier: try reader.string())
        case BA_WIRE_LOAD_FAILED.rawValue:
            guard let failure = LoadFailure(wire: try reader.u8()) else {
                throw WireViolation(message: "the extension sent an unknown load failure")
            }
            message = .loadFailed(failure, try reader.string() ?? "")
        case BA_WIRE_DOWNLOAD.rawValue:
            let eventID = try reader.u32()
            var downloads = [try reader.download()]
            while !reader.isAtEnd { downloads.append(try reader.download()) }
            message = .downloads(eventID: eventID, downloads)
        case BA_WIRE_EVENT_DONE.rawValue:
            message = .eventDone(eventID: try reader.u32())
        case BA_WIRE_ANSWER.rawValue:
            let eventID = try reader.u32()
            switch try reader.u8() {
            case 0: message = .answer(eventID: eventID, false)
            case 1: message = .answer(eventID: eventID, true)
            case let other: throw WireViolation(message: "the extension sent an answer of \(other), not a boolean")
            }
        case BA_WIRE_CHALLENGE_ANSWER.rawValue:
            let eventID = try reader.u32()
            let disposition = try reader.i32()
            let user = try reader.string(), password = try reader.string()
            guard (user?.utf8.count ?? 0) <= Int(BA_WIRE_MAX_CREDENTIAL),
                (password?.utf8.count ?? 0) <= Int(BA_WIRE_MAX_CREDENTIAL)
            else { throw WireViolation(message: "a challenge's credential is longer than \(BA_WIRE_MAX_CREDENTIAL) bytes") }
            guard let answer = ChallengeAnswer(disposition: Int(disposition), user: user, password: password) else {
                throw WireViolation(message: "the extension answered a challenge with disposition \(disposition), which Apple does not define")
            }
            message = .challengeAnswer(eventID: eventID, answer)
        case BA_WIRE_FILE_LEFT.rawValue:
            message = .fileLeft(eventID: try reader.u32())
        case BA_WIRE_CALL.rawValue:
            let id = try reader.u32()
            let function = UInt32(try reader.u8())
            switch function {
            case BA_WIRE_SCHEDULE.rawValue: message = .call(id: id, .schedule(try reader.download()))
            case BA_WIRE_START_FOREGROUND.rawValue: message = .call(id: id, .startForeground(try reader.download()))
            case BA_WIRE_CANCEL.rawValue: message = .call(id: id, .cancel(try reader.download()))
            case BA_WIRE_FETCH.rawValue: message = .call(id: id, .fetchCurrentDownloads)
            case BA_WIRE_ACQUIRE_EXCLUSIVE.rawValue:
                message = .call(id: id, .acquireExclusiveControl(timeoutMilliseconds: try reader.i64()))
            case BA_WIRE_RELEASE_EXCLUSIVE.rawValue: message = .call(id: id, .releaseExclusiveControl)
            default: throw WireViolation(message: "the extension sent a call to unknown host function \(function)")
            }
        case BA_WIRE_SANDBOX.rawValue:
            message = .sandbox(try reader.string() ?? "")
        case BA_WIRE_LOG.rawValue:
            var messages = [(level: try reader.i32(), text: try reader.string() ?? "")]
            while !reader.isAtEnd { messages.append((level: try reader.i32(), text: try reader.string() ?? "")) }
            message = .log(messages)
        case BA_WIRE_VIOLATION.rawValue:
            message = .violation(try reader.string() ?? "")
        case BA_WIRE_TERMINATE_DONE.rawValue:
            message = .terminateDone
        case BA_WIRE_RUNNER_FAILED.rawValue:
            message = .runnerFailed(try reader.string() ?? "")
        default:
            throw WireViolation(message: "the extension sent a packet of unknown type \(type)")
        }
        guard reader.isAtEnd else { throw WireViolation(message: "the extension sent a packet with trailing bytes") }
        return message
    }
}

/// Why the runner refused to load the extension.
public enum LoadFailure: String, Sendable, Codable {
    /// dlopen failed: not an ELF shared object, a missing dependency, a wrong architecture.
    case notLoadable
    /// No `ba_extension_entry` symbol, or it returned NULL.
    case missingEntry
    /// Built for another ABI major version, or its structs are too small to be any published version.
    case incompatibleABI
    /// The extension's init returned NULL.
    case initFailed

    init?(wire: UInt8) {
        switch UInt32(wire) {
        case BA_WIRE_NOT_LOADABLE.rawValue: self = .notLoadable
        case BA_WIRE_MISSING_ENTRY.rawValue: self = .missingEntry
        case BA_WIRE_INCOMPATIBLE.rawValue: self = .incompatibleABI
        case BA_WIRE_INIT_FAILED.rawValue: self = .initFailed
        default: return nil
        }
    }
}

/// Swift over the C reader: every read is bounds-checked there; here, strings must also be UTF-8.
private struct WireReader {
    private var reader = ba_wire_reader_t()

    init(_ bytes: UnsafeRawBufferPointer) {
        ba_wire_reader_init(&reader, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    var isAtEnd: Bool {
        var copy = reader
        return ba_wire_at_end(&copy)
    }

    private func short() -> WireViolation { WireViolation(message: "the extension sent a truncated or malformed packet") }

    mutating func u8() throws(WireViolation) -> UInt8 {
        var v: UInt8 = 0
        guard ba_wire_get_u8(&reader, &v) else { throw short() }
        return v
    }

    mutating func u32() throws(WireViolation) -> UInt32 {
        var v: UInt32 = 0
        guard ba_wire_get_u32(&reader, &v) else { throw short() }
        return v
    }

    mutating func i32() throws(WireViolation) -> Int32 {
        var v: Int32 = 0
        guard ba_wire_get_i32(&reader, &v) else { throw short() }
        return v
    }

    mutating func i64() throws(WireViolation) -> Int64 {
        var v: Int64 = 0
        guard ba_wire_get_i64(&reader, &v) else { throw short() }
        return v
    }

    mutating func string() throws(WireViolation) -> String? {
        var pointer: UnsafePointer<CChar>?
        var length = 0
        guard ba_wire_get_str(&reader, &pointer, &length) else { throw short() }
        return try pointer.map { p throws(WireViolation) in try Self.text(p, length) }
    }

    static func text(_ pointer: UnsafePointer<CChar>, _ length: Int) throws(WireViolation) -> String {
        guard strlen(pointer) == length, let text = String(validatingCString: pointer) else {
            throw WireViolation(message: "the extension sent a string that is not UTF-8 text")
        }
        return text
    }

    mutating func download() throws(WireViolation) -> Download {
        var d = ba_download_t()
        var headers = [UnsafePointer<CChar>?](repeating: nil, count: Int(BA_WIRE_MAX_HEADERS))
        let ok = headers.withUnsafeMutableBufferPointer { ba_wire_get_download(&reader, &d, $0.baseAddress) }
        guard ok else { throw short() }
        return try Download(wire: d)
    }
}

extension Download {
    /// Checks a decoded `ba_download_t` whose strings point into a packet.
    fileprivate init(wire d: ba_download_t) throws(WireViolation) {
        func text(_ p: UnsafePointer<CChar>?) throws(WireViolation) -> String? {
            try p.map { p throws(WireViolation) in try WireReader.text(p, strlen(p)) }
        }
        // Only the ABI's kinds: an asset pack's download is the host's own.
        guard let kind = Kind(rawValue: d.kind), kind != .assetPack else {
            throw WireViolation(message: "the extension sent a download of unknown kind")
        }
        guard let identifier = try text(d.identifier), let group = try text(d.application_group_identifier) else {
            throw WireViolation(message: "the extension sent a download without identifier or application group")
        }
        var headers: [String] = []
        for i in 0..<Int(d.http_header_count) {
            if let header = try text(d.http_headers[i]) { headers.append(header) }
        }
        self.init(
            kind: kind, identifier: identifier, uniqueIdentifier: try text(d.unique_identifier), url: try text(d.url),
            applicationGroupIdentifier: group, fileSize: d.file_size, priority: d.priority, state: d.state,
            isEssential: d.essential, sha256: try text(d.sha256), httpHeaders: headers,
            networkAccess: NetworkAccess(rawValue: UInt32(truncatingIfNeeded: d.network_access)))
    }
}

/// Builds host → runner packets.
struct WirePacket: ~Copyable {
    private var writer = ba_wire_writer_t()

    init(_ type: ba_wire_type_t) { ba_wire_writer_init(&writer, UInt8(type.rawValue)) }
    deinit { free(writer.bytes) }

    mutating func u8(_ v: UInt8) { ba_wire_put_u8(&writer, v) }
    mutating func u32(_ v: UInt32) { ba_wire_put_u32(&writer, v) }
    mutating func i32(_ v: Int32) { ba_wire_put_i32(&writer, v) }
    mutating func i64(_ v: Int64) { ba_wire_put_i64(&writer, v) }
    mutating func string(_ s: String?) {
        guard let s else { return ba_wire_put_str(&writer, nil) }
        var utf8 = Array(s.utf8)
        utf8.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { ba_wire_put_bytes_as_str(&writer, $0.baseAddress, $0.count) }
        }
    }

    mutating func download(_ d: Download) {
        d.withABI { ba_wire_put_download(&writer, $0) }
    }

    func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        body(UnsafeRawBufferPointer(start: writer.bytes, count: writer.length))
    }
}

// MARK: Host → runner messages

extension WirePacket {
    /// EVENT: a window event for the extension, numbered `id` from 1 in the order the window delivers them.
    static func event(_ event: WindowEvent, id: UInt32) -> WirePacket {
        var packet = WirePacket(BA_WIRE_EVENT)
        packet.u32(id)
        switch event {
        case .contentRequest(let request, let manifestPath, let info):
            packet.u8(UInt8(BA_WIRE_CONTENT_REQUEST.rawValue))
            packet.i32(request.rawValue)
            packet.string(manifestPath)
            packet.i64(info.restrictedDownloadSizeRemaining ?? -1)
            packet.i64(info.restrictedEssentialDownloadSizeRemaining ?? -1)
        case .downloadFailed(let download, let error, let ticket):
            packet.u8(UInt8(BA_WIRE_FAILED.rawValue))
            packet.download(download)
            packet.i64(error.code)
            packet.string(error.domain)
            packet.string(error.message)
            packet.string(ticket)
        case .downloadFinished(let download, let filePath):
            packet.u8(UInt8(BA_WIRE_FINISHED.rawValue))
            packet.download(download)
            packet.string(filePath)
        case .challenge(let download, let challenge):
            packet.u8(UInt8(BA_WIRE_CHALLENGE.rawValue))
            packet.download(download)
            packet.string(challenge.host)
            packet.i32(Int32(clamping: challenge.port))
            packet.string(challenge.scheme)
            packet.string(challenge.realm)
            packet.string(challenge.authenticationMethod)
            packet.i32(Int32(clamping: challenge.previousFailureCount))
        case .shouldDownload(let offer):
            packet.u8(UInt8(BA_WIRE_SHOULD_DOWNLOAD.rawValue))
            packet.string(offer.id)
            packet.i64(Int64(offer.version))
            packet.i64(offer.downloadSize)
            packet.string(offer.userInfo.map { String(decoding: $0, as: UTF8.self) } ?? "")
        }
        return packet
    }

    /// REPLY: how a host function call ended (code 0 and no domain for success).
    static func reply(_ id: UInt32, _ result: Result<Void, HostError>) -> WirePacket {
        var packet = WirePacket(BA_WIRE_REPLY)
        packet.u32(id)
        switch result {
        case .success:
            packet.i64(0)
            packet.string(nil)
            packet.string(nil)
        case .failure(let error):
            packet.i64(error.code)
            packet.string(error.domain)
            packet.string(error.message)
        }
        return packet
    }

    /// REPLY_DOWNLOAD: one of the downloads `fetchCurrentDownloads` answers with, before its REPLY.
    static func replyDownload(_ id: UInt32, _ download: Download) -> WirePacket {
        var packet = WirePacket(BA_WIRE_REPLY_DOWNLOAD)
        packet.u32(id)
        packet.download(download)
        return packet
    }
}

