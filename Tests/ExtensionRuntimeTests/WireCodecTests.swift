import CBAExtension
import ExtensionWire
@testable import ExtensionRuntime
import Testing

/// The host decodes packets written by extension code: a packet is either exactly what the protocol says, or a
/// violation.
@Suite struct WireCodecTests {
    /// A CALL scheduling a download, as the runner encodes it (with the C writer).
    func scheduleCall() -> [UInt8] {
        var writer = ba_wire_writer_t()
        ba_wire_writer_init(&writer, UInt8(BA_WIRE_CALL.rawValue))
        ba_wire_put_u32(&writer, 7)
        ba_wire_put_u8(&writer, UInt8(BA_WIRE_SCHEDULE.rawValue))
        "level-1".withCString { identifier in
            "https://assets.example.com/l1".withCString { url in
                "group.g".withCString { group in
                    "Authorization: x".withCString { header in
                        let headers: [UnsafePointer<CChar>?] = [header]
                        headers.withUnsafeBufferPointer { h in
                            var d = ba_download_t()
                            d.struct_size = UInt32(MemoryLayout<ba_download_t>.size)
                            d.identifier = identifier
                            d.url = url
                            d.application_group_identifier = group
                            d.file_size = 42
                            d.priority = 50
                            d.essential = true
                            d.http_headers = h.baseAddress
                            d.http_header_count = 1
                            ba_wire_put_download(&writer, &d)
                        }
                    }
                }
            }
        }
        defer { ba_wire_writer_free(&writer) }
        return Array(UnsafeBufferPointer(start: writer.bytes, count: writer.length))
    }

    func decode(_ bytes: [UInt8]) -> Result<RunnerMessage, WireViolation> {
        bytes.withUnsafeBytes { raw in Result { () throws(WireViolation) in try RunnerMessage.decode(raw) } }
    }

    /// Each prefix of `packet` is a violation, except those of the lengths in `whole` (where a batch may end).
    func expectEveryCutFails(_ packet: [UInt8], except whole: Set<Int> = []) {
        for length in 0..<packet.count where !whole.contains(length) {
            guard case .failure = decode(Array(packet.prefix(length))) else {
                Issue.record("a packet cut to \(length) of \(packet.count) bytes decoded")
                continue
            }
        }
    }

    @Test func aValidPacketDecodesToWhatWasEncoded() throws {
        guard case .success(.call(let id, .schedule(let download))) = decode(scheduleCall()) else {
            Issue.record("the packet did not decode as a schedule call")
            return
        }
        #expect(id == 7)
        #expect(download.identifier == "level-1" && download.url == "https://assets.example.com/l1")
        #expect(download.applicationGroupIdentifier == "group.g" && download.fileSize == 42)
        #expect(download.isEssential && download.priority == 50 && download.httpHeaders == ["Authorization: x"])
    }

    @Test func everyTruncationIsAViolation() {
        let packet = scheduleCall()
        expectEveryCutFails(packet)
        guard case .failure(let error) = decode(packet + [0]) else {
            Issue.record("a packet with a trailing byte decoded")
            return
        }
        #expect(error.message == "the extension sent a packet with trailing bytes")
    }

    /// A DOWNLOAD packet as the runner gathers it: an event id, then downloads to the packet's end.
    func downloadsPacket(_ identifiers: [String]) -> [UInt8] {
        var writer = ba_wire_writer_t()
        ba_wire_writer_init(&writer, UInt8(BA_WIRE_DOWNLOAD.rawValue))
        ba_wire_put_u32(&writer, 1)
        for identifier in identifiers {
            identifier.withCString { id in
                "https://a.example.com/x".withCString { url in
                    "group.g".withCString { group in
                        var d = ba_download_t()
                        d.struct_size = UInt32(MemoryLayout<ba_download_t>.size)
                        d.identifier = id
                        d.url = url
                        d.application_group_identifier = group
                        ba_wire_put_download(&writer, &d)
                    }
                }
            }
        }
        defer { ba_wire_writer_free(&writer) }
        return Array(UnsafeBufferPointer(start: writer.bytes, count: writer.length))
    }

    /// Several downloads in one packet come out in order; a packet cut anywhere, even between two downloads'
    /// fields, is a violation, and so is one with no download at all.
    @Test func aBatchOfDownloadsDecodesInOrderAndEveryTruncationIsAViolation() {
        let packet = downloadsPacket(["a", "b", "c"])
        guard case .success(.downloads(1, let downloads)) = decode(packet) else {
            Issue.record("the packet did not decode as downloads")
            return
        }
        #expect(downloads.map(\.identifier) == ["a", "b", "c"])
        let whole = Set([downloadsPacket(["a"]).count, downloadsPacket(["a", "b"]).count, packet.count])
        expectEveryCutFails(packet, except: whole)
        guard case .failure = decode(downloadsPacket([])) else {
            Issue.record("a DOWNLOAD packet without a download decoded")
            return
        }
    }

    /// A LOG packet as the runner gathers what is logged within a few milliseconds: a level and a text, repeated.
    func logPacket(_ messages: [(Int32, String)]) -> [UInt8] {
        var writer = ba_wire_writer_t()
        ba_wire_writer_init(&writer, UInt8(BA_WIRE_LOG.rawValue))
        for (level, text) in messages {
            ba_wire_put_i32(&writer, level)
            ba_wire_put_str(&writer, text)
        }
        defer { ba_wire_writer_free(&writer) }
        return Array(UnsafeBufferPointer(start: writer.bytes, count: writer.length))
    }

    /// Several log messages in one packet come out in order with their levels; a packet cut inside a message, or
    /// one with no message, is a violation.
    @Test func aBatchOfLogMessagesDecodesInOrderAndEveryTruncationIsAViolation() {
        let messages: [(Int32, String)] = [
            (Int32(BA_LOG_INFO.rawValue), "requesting a"), (Int32(BA_LOG_ERROR.rawValue), "b failed"),
            (Int32(BA_LOG_DEBUG.rawValue), ""),
        ]
        let packet = logPacket(messages)
        guard case .success(.log(let decoded)) = decode(packet) else {
            Issue.record("the packet did not decode as log messages")
            return
        }
        #expect(decoded.map(\.level) == messages.map(\.0))
        #expect(decoded.map(\.text) == messages.map(\.1))
        let whole = Set((1...messages.count).map { logPacket(Array(messages.prefix($0))).count })
        expectEveryCutFails(packet, except: whole)
        guard case .failure = decode(logPacket([])) else {
            Issue.record("a LOG packet without a message decoded")
            return
        }
    }
}
