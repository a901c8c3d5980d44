import AppConfig
@testable import ExtensionRuntime
import Foundation
import PackAuthoring
import Packs
import Policy
import ServiceWire
@testable import Transfer
import Vocabulary

/// Every parser that reads what another party wrote, as a fuzz target: bytes in, parsed or refused, never a crash,
/// a hang or unbounded memory. A thrown error is a refusal, which is the right answer to most inputs.
///
/// Two of the parsers are internal to their modules (the runner's messages, a response's headers), hence
/// `@testable`: fuzz builds are debug builds (`Fuzz/run.sh`), which allow it.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// What an extension's process sends the host (`RunnerMessage.decode`).
    case runnerMessages = "runner-messages"
    /// The frames on the service's socket, both ways, compact and JSON: what an app sends the service
    /// (`ServiceProtocol.decodeClientMessage`), and what the service sends an app (`decodeServiceMessage`, and a
    /// reply of downloads read in place as the C library reads it, `DownloadsReply`, which must agree with it).
    case serviceFrames = "service-frames"
    /// An app's Info.plist, XML or binary (`AppConfiguration`).
    case infoPlist = "info-plist"
    /// A pack author's manifest (`PackManifest`).
    case packManifest = "pack-manifest"
    /// A server's download manifest (`DownloadManifest`).
    case downloadManifest = "download-manifest"
    /// A pack archive's index and its extraction (libarchive, the checks around it).
    case packArchive = "pack-archive"
    /// A server's response: status, Location, Content-Range, ETag, Retry-After, WWW-Authenticate (`ResponseVerdict`).
    case httpResponse = "http-response"
    /// The URL and request headers of a download an extension or an app returns: admission (`DownloadValidation`,
    /// the allow list), the URL as it will be fetched, and the HTTP request made of both.
    case downloadRequest = "download-request"
    /// A Steam depot build script (Valve's KeyValues text) that `bahost pack convert` reads (`KeyValues.parse`, then
    /// the lookups the conversion makes).
    case steamDepotScript = "steam-depot-script"
    /// A Flatpak instance's `.flatpak-info` (`FlatpakInfo`): the service reads a peer's to prove its app.
    case flatpakInfo = "flatpak-info"

    /// Feeds `data` to the parser; true when it was accepted (parsed, or for an archive, extracted).
    @discardableResult
    public func run(_ data: Data) -> Bool {
        switch self {
        case .runnerMessages:
            return data.withUnsafeBytes { (try? RunnerMessage.decode($0)) != nil }
        case .serviceFrames:
            return Self.readServiceFrame(data)
        case .infoPlist:
            return (try? AppConfiguration(infoPlist: data)) != nil
        case .packManifest:
            guard let manifest = try? JSONDecoder().decode(PackManifest.self, from: data) else { return false }
            return (try? manifest.validate()) != nil
        case .downloadManifest:
            return (try? DownloadManifest(data: data)) != nil
        case .packArchive:
            return Self.extractArchive(data)
        case .httpResponse:
            return Self.readResponse(data)
        case .downloadRequest:
            return Self.admitRequest(data)
        case .steamDepotScript:
            guard let root = try? KeyValues.parse(String(decoding: data, as: UTF8.self)) else { return false }
            let config = root.child("DepotBuildConfig")
            _ = (config?.value("ContentRoot"), config?.children("FileMapping").map { $0.values("LocalPath") })
            return true
        case .flatpakInfo:
            return FlatpakInfo(parsing: data) != nil
        }
    }

    /// Accepted: read as a client's message or as the service's. A JSON one is held to Foundation's decoder
    /// (`holdJSONToFoundation`). A reply of downloads is also read in place; the two
    /// readers must agree on every download, or both refuse it, and one they accept, written again from its downloads
    /// in place as the service writes it (`DownloadsReply.Builder`), must be the same bytes (a disagreement stops the
    /// fuzzer: a finding).
    private static func readServiceFrame(_ data: Data) -> Bool {
        let request = try? ServiceProtocol.decodeClientMessage(data)
        let message = try? ServiceProtocol.decodeServiceMessage(data)
        if let reply = DownloadsReply(frame: data) {
            let inPlace = try? reply.downloads()
            if case .reply(let id, .downloads(let decoded))? = message {
                precondition(id == reply.id && inPlace == decoded, "the two readers of a reply of downloads disagree")
            } else {
                precondition(inPlace == nil, "a reply of downloads read in place that the decoder refuses")
            }
            if inPlace != nil {
                let builder = DownloadsReply.Builder()
                var key: Int64 = 0
                try? reply.forEach { fields in
                    builder.append(fields, key: key)
                    key += 1
                }
                precondition(Data(builder.frame(answering: reply.id)) == data, "a reply written again is not the frame it was")
            }
        }
        if data.first != 0x01 { holdJSONToFoundation(request, message) }
        return request != nil || message != nil
    }

    /// A JSON frame the protocol's own reader (`WireJSON`) accepted, written again by its writer, must be read by
    /// Foundation's decoder as the same message, and written again to the same bytes.
    private static func holdJSONToFoundation(_ request: ClientMessage?, _ message: ServiceMessage?) {
        func check<M: Codable>(_ value: M, _ decode: (Frame) throws -> M) {
            guard let written = try? WireJSON.encode(value) else { return }
            let foundation = try? JSONDecoder().decode(M.self, from: Data(written))
            precondition(
                foundation.map { String(describing: $0) } == String(describing: value),
                "Foundation reads what WireJSON wrote as another message")
            let again = try? decode(Frame(written))
            precondition(again.map { String(describing: $0) } == String(describing: value), "WireJSON reads itself otherwise")
        }
        if let request { check(request) { try ServiceProtocol.decodeClientMessage($0) } }
        if let message { check(message) { try ServiceProtocol.decodeServiceMessage($0) } }
    }

    /// The input: the URL on the first line, then one request header a line. Accepted: admitted, and made into the
    /// request that would be sent, which must name the URL's own host and none of the headers the host keeps.
    private static func admitRequest(_ data: Data) -> Bool {
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        guard let url = lines.first else { return false }
        let download = Download(
            identifier: "fuzzed", url: url, applicationGroupIdentifier: "group.com.example.levels", fileSize: 1024,
            httpHeaders: Array(lines.dropFirst()))
        let rules = DownloadRules(appGroupIdentifier: "group.com.example.levels", allowInsecureLoopback: true)
        _ = url.printableURL(limit: 200)
        guard DownloadValidation.check(download, for: .install, rules: rules) == nil else { return false }
        let admitted = DownloadValidation.normalized(download)
        let fetched = admitted.url ?? ""
        guard DownloadValidation.check(admitted, for: .install, rules: rules) == nil else {
            fatalError("a normalised URL was refused: \(fetched.printable())")
        }
        _ = DomainAllowList(["assets.example.com", "*.cdn.example"]).permits(fetched)
        let request = TransferRequest(
            url: fetched, headers: admitted.httpHeaders, expectedSize: 1024, partialPath: "/nonexistent") { _ in nil }
        // A URL the transfer cannot request fails its transfer with NSURLErrorBadURL; nothing is sent.
        guard let lines = try? request.headerLines(url: fetched, offset: 0) else { return true }
        for line in lines {
            // One header a line: a line break inside one would let it write others.
            guard !line.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                fatalError("an admitted download's header holds a line break: \(line.printable())")
            }
            let name = line.prefix { $0 != ":" && $0 != ";" }.lowercased()
            guard !["host", "content-length", "transfer-encoding", "connection", "range"].contains(name) else {
                fatalError("an admitted download sends its own \(name) header")
            }
        }
        return true
    }

    /// A scratch folder of this process, for the archive target's files.
    private static let scratch: URL = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bahost-fuzz-\(getpid())")
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }()

    /// Reads the archive's index; when there is one, extracts the archive against it into a fresh folder.
    private static func extractArchive(_ data: Data) -> Bool {
        let archive = scratch.appendingPathComponent("input.tar.zst")
        let staging = scratch.appendingPathComponent("staging")
        try? FileManager.default.removeItem(at: staging)
        guard (try? data.write(to: archive)) != nil, let index = try? PackArchive.readIndex(archive.path) else {
            return false
        }
        try? FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        return (try? PackArchive.extract(archive.path, expected: index, into: staging)) != nil
    }

    /// The input: a status line ("206 123": status and the bytes already on disk), then header lines, as a server
    /// sends them. Accepted: a verdict that read the headers (a body, a redirect, a Retry-After, a challenge).
    private static func readResponse(_ data: Data) -> Bool {
        // Split on the bytes: "\r\n" is one Character to Swift's String.
        var lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map {
            String(decoding: $0.last == UInt8(ascii: "\r") ? $0.dropLast() : $0, as: UTF8.self)
        }
        guard !lines.isEmpty else { return false }
        let first = lines.removeFirst().split(separator: " ")
        guard let status = first.first.flatMap({ Int($0) }) else { return false }
        let offset = first.dropFirst().first.flatMap { Int64($0) } ?? 0
        var headers = ResponseHeaders()
        for line in lines {
            // Each line as the transfer thread reads it from libcurl (`HTTPExchange`), with its line ending.
            var bytes = Array(line.utf8)
            bytes.append(contentsOf: [0x0D, 0x0A])
            if let (name, value) = bytes.withUnsafeBytes({ ResponseHeaders.field($0) }) {
                headers.add(name: name, value: value)
            }
        }
        let request = TransferRequest(
            url: "https://assets.example.com/level.pack", expectedSize: 1_048_576, partialPath: "/nonexistent",
            validator: Validator(etag: "\"v1\"", lastModified: nil)
        ) { _ in nil }
        let verdict = ResponseVerdict.of(
            status: status, headers: headers, url: request.url, offset: max(0, offset), request: request)
        switch verdict {
        case .body, .redirect: return true
        case .fail(let error): return error.retryAfter != nil || error.challenge != nil
        case .restart: return false
        }
    }
}
