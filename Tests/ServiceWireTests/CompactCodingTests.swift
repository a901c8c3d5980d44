import Foundation
import ServiceWire
import Testing
import Vocabulary

@Suite struct CompactCodingTests {
    let download = Download(
        kind: .url, identifier: "level-1", uniqueIdentifier: "BAURLDownload.group.x.1", url: "https://a.example.com/l1",
        applicationGroupIdentifier: "group.x", fileSize: 1 << 40, priority: 100, state: 2, isEssential: true,
        sha256: String(repeating: "a", count: 64), httpHeaders: ["X-A: 1", "X-B: é"])

    let bare = Download(identifier: "b", url: nil, applicationGroupIdentifier: "group.x", fileSize: 0)

    /// The hot messages travel compact and come back equal; the rest stay JSON.
    @Test func hotMessagesRoundTripCompactly() throws {
        let requests: [ServiceRequest] = [
            .schedule(download), .startForeground(download), .cancel(download), .currentDownloads, .setDelegate(true),
        ]
        for request in requests {
            let frame = try ServiceProtocol.encode(ClientMessage.request(id: 7, request))
            #expect(frame.first == 0x01)
            guard case .request(7, let decoded) = try ServiceProtocol.decodeClientMessage(frame) else {
                Issue.record("not a request")
                continue
            }
            #expect(String(describing: decoded) == String(describing: request))
        }
        let error = HostError(code: 55, domain: "BAErrorDomain", message: "no")
        let messages: [ServiceMessage] = [
            .reply(id: 3, .ok), .reply(id: 3, .downloads([download, download])), .reply(id: 3, .failure(error)),
            .event(.began(download)), .event(.paused(download)),
            .event(.progress(download, bytesWritten: 1, totalBytesWritten: 2, totalBytesExpected: 3)),
            .callback(id: 9, .finished(download, filePath: "/x/y")), .callback(id: 9, .failed(download, error, ticket: "/x/y.failed")),
            .progress(id: 4, ProgressLine(text: "queued a", json: "{}")), .progress(id: 4, ProgressLine(text: nil, json: "{}")),
            // A frame that outgrows the writer's first buffer, and a reply sized before it is written, with a
            // download whose optional fields are absent.
            .progress(id: 4, ProgressLine(text: String(repeating: "é", count: 5_000), json: "{}")),
            .reply(id: 3, .downloads(Array(repeating: download, count: 1_000) + [bare])),
        ]
        for message in messages {
            let frame = try ServiceProtocol.encode(message)
            #expect(frame.first == 0x01)
            let decoded = try ServiceProtocol.decodeServiceMessage(frame)
            #expect(String(describing: decoded) == String(describing: message))
        }
        let hello = try ServiceProtocol.encode(ClientMessage.request(id: 1, .hello(Hello(role: .app, appIdentifier: "a"))))
        #expect(hello.first == UInt8(ascii: "{"))
    }

    /// The networks a download avoids (protocol 3) travel both ways, compact and as JSON; a download that avoids none
    /// encodes as JSON without the field, as before.
    @Test func networkAccessRoundTrips() throws {
        var avoiding = download
        avoiding.networkAccess = [.avoidsExpensive, .avoidsConstrained]
        let frame = try ServiceProtocol.encode(ClientMessage.request(id: 7, .schedule(avoiding)))
        guard case .request(7, .schedule(let decoded)) = try ServiceProtocol.decodeClientMessage(frame) else {
            Issue.record("not a schedule request")
            return
        }
        #expect(decoded == avoiding)
        let reply = try ServiceProtocol.encode(ServiceMessage.reply(id: 3, .downloads([avoiding, download])))
        #expect(String(describing: try ServiceProtocol.decodeServiceMessage(reply))
            == String(describing: ServiceMessage.reply(id: 3, .downloads([avoiding, download]))))
        #expect(try JSONDecoder().decode(Download.self, from: JSONEncoder().encode(avoiding)) == avoiding)
        #expect(!String(decoding: try JSONEncoder().encode(download), as: UTF8.self).contains("networkAccess"))
    }

    /// Every truncation, and every frame with bytes added, is refused with an error rather than a crash.
    @Test func truncatedAndPaddedFramesAreRefused() throws {
        let frame = try ServiceProtocol.encode(ServiceMessage.reply(id: 3, .downloads([download])))
        for length in 1..<frame.count {
            #expect(throws: ServiceWireError.self) { try ServiceProtocol.decodeServiceMessage(frame.prefix(length)) }
        }
        #expect(throws: ServiceWireError.self) { try ServiceProtocol.decodeServiceMessage(frame + [0]) }
        // A count that claims more downloads than the frame could hold.
        var lying = [UInt8](frame)
        lying.replaceSubrange(10..<18, with: [0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0])
        #expect(throws: ServiceWireError.self) { try ServiceProtocol.decodeServiceMessage(Data(lying)) }
        let request = try ServiceProtocol.encode(ClientMessage.request(id: 1, .schedule(download)))
        for length in 1..<request.count {
            #expect(throws: ServiceWireError.self) { try ServiceProtocol.decodeClientMessage(request.prefix(length)) }
        }
    }

    /// A string is taken only as valid UTF-8: bytes that are not (a lone continuation byte, a sequence cut short, an
    /// overlong form, a surrogate) are refused, never repaired, whether the rest of the text is ASCII or not; valid
    /// text comes back byte for byte.
    @Test func aStringThatIsNotUTF8IsRefused() throws {
        func frame(identifier: [UInt8]) -> Data {
            var bytes: [UInt8] = [0x01, 1]  // compact, schedule
            bytes += withUnsafeBytes(of: Int64(7).littleEndian, Array.init)
            bytes += withUnsafeBytes(of: Int64(Download.Kind.url.rawValue).littleEndian, Array.init)
            bytes += withUnsafeBytes(of: Int64(identifier.count).littleEndian, Array.init) + identifier
            bytes += [0, 0]  // no unique identifier, no URL
            bytes += withUnsafeBytes(of: Int64(1).littleEndian, Array.init) + Array("g".utf8)
            for value: Int64 in [0, 50, 0] { bytes += withUnsafeBytes(of: value.littleEndian, Array.init) }
            bytes += [0, 0] + withUnsafeBytes(of: Int64(0).littleEndian, Array.init)  // not essential, no hash, no headers
            bytes += withUnsafeBytes(of: Int64(0).littleEndian, Array.init)  // any network (protocol 3)
            return Data(bytes)
        }
        for valid in ["level-1", "é/ü", "数据", "🎮 pack", ""] {
            guard case .request(7, .schedule(let decoded)) = try ServiceProtocol.decodeClientMessage(
                frame(identifier: Array(valid.utf8)))
            else {
                Issue.record("not a schedule request")
                continue
            }
            #expect(Array(decoded.identifier.utf8) == Array(valid.utf8))
        }
        let invalid: [[UInt8]] = [[0x80], [0x61, 0xC3], [0xF0, 0x9F, 0x98, 0x41], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xFF]]
        for bytes in invalid {
            let error = #expect(throws: ServiceWireError.self) {
                try ServiceProtocol.decodeClientMessage(frame(identifier: bytes))
            }
            guard case .protocolViolation(let message)? = error else { continue }
            #expect(message == "a string is not UTF-8", "\(bytes)")
        }
    }

    /// A reply written from downloads in place (the service's, from its queue's rows), given in any order with
    /// their keys, is byte for byte the frame of the same downloads as values in key order: past the writer's first
    /// buffer, with optional fields absent, with headers, and with none at all.
    @Test func aReplyWrittenFromDownloadsInPlaceIsTheFrameOfTheirValues() throws {
        var downloads: [Download] = []
        for index in 0..<2_000 {
            var next = index % 3 == 0 ? bare : download
            next.identifier = "\(index)-\(next.identifier)"
            next.priority = Int64(index)
            downloads.append(next)
        }
        // Keys in runs (as the queue's rows come, one run per state), then shuffled.
        let keys = downloads.indices.map { Int64($0 % 2 == 0 ? $0 : 10_000 + $0) }
        for order in [Array(downloads.indices), Array(downloads.indices).shuffled()] {
            let builder = DownloadsReply.Builder()
            for index in order { Self.inPlace(downloads[index]) { builder.append($0, key: keys[index]) } }
            let inKeyOrder = downloads.indices.sorted { keys[$0] < keys[$1] }.map { downloads[$0] }
            let values = try ServiceProtocol.encode(ServiceMessage.reply(id: 77, .downloads(inKeyOrder)))
            #expect(builder.frame(answering: 77) == values)
        }
        let empty = try ServiceProtocol.encode(ServiceMessage.reply(id: 5, .downloads([])))
        #expect(DownloadsReply.Builder().frame(answering: 5) == empty)
    }

    /// `download` read in place: its strings lent as UTF-8 bytes for the call.
    private static func inPlace(_ d: Download, _ body: (DownloadInPlace) -> Void) {
        func lend(_ text: String?, _ then: (UnsafeBufferPointer<UInt8>?) -> Void) {
            guard let text else { return then(nil) }
            Array(text.utf8).withUnsafeBufferPointer { then($0) }
        }
        lend(d.identifier) { identifier in
            lend(d.uniqueIdentifier) { uniqueIdentifier in
                lend(d.url) { url in
                    lend(d.applicationGroupIdentifier) { group in
                        lend(d.sha256) { sha256 in
                            body(DownloadInPlace(
                                kind: d.kind, identifier: identifier!, uniqueIdentifier: uniqueIdentifier, url: url,
                                applicationGroupIdentifier: group!, fileSize: d.fileSize, priority: d.priority,
                                state: d.state, isEssential: d.isEssential, sha256: sha256, httpHeaders: d.httpHeaders))
                        }
                    }
                }
            }
        }
    }

    /// A reply to a fetch kept as its frame (`DownloadsReply`) reads back the downloads the service sent, as values
    /// and as fields in place; any other frame is not one; a reply that lies is refused as it is read.
    @Test func aReplyOfDownloadsIsReadInPlace() throws {
        let downloads = [download, bare, download]
        let frame = try ServiceProtocol.encode(ServiceMessage.reply(id: 42, .downloads(downloads)))
        let reply = try #require(DownloadsReply(frame: frame))
        #expect(reply.id == 42 && reply.count == 3)
        #expect(try reply.downloads() == downloads)
        var seen: [Download] = []
        var headers: [[String]] = []
        try reply.forEach { fields in
            seen.append(fields.download)
            headers.append(fields.httpHeaders)
            #expect(fields.httpHeaders.count == fields.download.httpHeaders.count)
        }
        #expect(seen == downloads)
        #expect(headers == downloads.map(\.httpHeaders))
        #expect(try DownloadsReply([bare]).downloads() == [bare])

        #expect(DownloadsReply(frame: try ServiceProtocol.encode(ServiceMessage.reply(id: 42, .ok))) == nil)
        #expect(DownloadsReply(frame: try ServiceProtocol.encode(ServiceMessage.event(.began(download)))) == nil)
        #expect(DownloadsReply(frame: Data("{}".utf8)) == nil)
        for length in 1..<frame.count {
            guard let cut = DownloadsReply(frame: frame.prefix(length)) else { continue }
            #expect(throws: ServiceWireError.self) { try cut.forEach { _ in } }
        }
        #expect(throws: ServiceWireError.self) { try DownloadsReply(frame: frame + [0])!.forEach { _ in } }
    }
}
