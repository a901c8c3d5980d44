import Foundation
import Vocabulary

/// The service's reply to `currentDownloads`, kept as its compact frame and read where it is used: the language
/// bindings (`ba/app.h`) copy its downloads straight from the frame into C memory, where making a `Download` of each
/// first (its strings, its header array) and then unmaking it was most of an app's fetch of 10,000
/// (docs/PERFORMANCE.md).
public struct DownloadsReply: Sendable {
    /// The request it answers.
    public let id: UInt64
    /// How many downloads it holds.
    public let count: Int
    private let frame: Data

    /// `frame` if it is a compact reply to `currentDownloads`, else nil. Only its head is read here: its downloads
    /// are checked as they are read.
    public init?(frame: Data) {
        let head: (UInt64, Int)? = frame.withUnsafeBytes { raw in
            let bytes = raw.assumingMemoryBound(to: UInt8.self)
            guard bytes.first == ServiceProtocol.compactTag else { return nil }
            var reader = CompactReader(bytes)
            guard let (kind, id) = try? reader.header(), kind == .replyDownloads,
                let count = try? reader.count(each: 40)
            else { return nil }
            return (id, count)
        }
        guard let (id, count) = head else { return nil }
        self.id = id
        self.count = count
        self.frame = frame
    }

    /// `downloads` as the service replies them.
    public init(_ downloads: [Download]) throws {
        guard let reply = DownloadsReply(frame: try ServiceProtocol.encode(.reply(id: 0, .downloads(downloads)))) else {
            throw ServiceWireError.protocolViolation("a reply of downloads did not encode as one")
        }
        self = reply
    }

    /// The downloads as values.
    public func downloads() throws -> [Download] {
        var downloads: [Download] = []
        downloads.reserveCapacity(count)
        try forEach { downloads.append($0.download) }
        return downloads
    }

    /// Calls `body` with each download's fields, in order; they point into the frame, and live only during the call.
    /// Throws `ServiceWireError.protocolViolation` for a frame that lies (a length past its end, text that is not
    /// UTF-8, bytes after the last download), which may come after `body` saw the downloads before it.
    public func forEach(_ body: (DownloadFields) throws -> Void) throws {
        try frame.withUnsafeBytes { raw in
            var reader = CompactReader(raw.assumingMemoryBound(to: UInt8.self))
            _ = try reader.header()
            _ = try reader.count(each: 40)
            for _ in 0..<count { try body(try reader.downloadFields()) }
            try reader.end()
        }
    }
}

extension DownloadsReply {
    /// Writes a reply from downloads read in place, given in any order with the key that puts each in order: the
    /// service writes its reply to `fetchCurrentDownloads` from its queue's rows as SQLite finds them, without a
    /// `Download` of each (docs/PERFORMANCE.md). The frame is byte for byte what `ServiceProtocol.encode` makes of the
    /// same downloads as values, in key order.
    public final class Builder {
        /// The downloads as written, each at its `entries` range; the frame copies them in key order.
        private let written = CompactWriter(capacity: 64 << 10)
        @exclusivity(unchecked) private var entries: [(key: Int64, range: Range<Int>)] = []

        public init() {}

        public func append(_ download: DownloadInPlace, key: Int64) {
            let start = written.used
            written.download(download)
            entries.append((key, start..<written.used))
        }

        /// The frame that answers request `id`.
        public func frame(answering id: UInt64) -> Data {
            // The header of `CompactWriter.encode`'s reply of downloads, then the downloads (less the tag written).
            let frame = CompactWriter(capacity: 1 + 9 + 8 + written.used - 1)
            frame.header(.replyDownloads, id).count(entries.count)
            for entry in entries.sorted(by: { $0.key < $1.key }) { frame.copy(entry.range, of: written) }
            return frame.finish()
        }
    }
}

/// A download as a compact frame holds it: numbers read, strings as their UTF-8 bytes in the frame (checked, not
/// NUL-terminated). Valid only while the frame's bytes are lent (`DownloadsReply.forEach`).
public struct DownloadFields {
    public let kind: Download.Kind
    public let identifier: UnsafeBufferPointer<UInt8>
    public let uniqueIdentifier: UnsafeBufferPointer<UInt8>?
    public let url: UnsafeBufferPointer<UInt8>?
    public let applicationGroupIdentifier: UnsafeBufferPointer<UInt8>
    public let fileSize: Int64
    public let priority: Int64
    public let state: Int32
    public let isEssential: Bool
    public let sha256: UnsafeBufferPointer<UInt8>?
    public let httpHeaders: Headers

    /// The `Name: value` header lines, each a string of the frame (its length, then its bytes), already checked.
    public struct Headers: Sequence {
        public let count: Int
        let bytes: UnsafeBufferPointer<UInt8>

        public func makeIterator() -> Iterator { Iterator(bytes: bytes) }

        public struct Iterator: IteratorProtocol {
            let bytes: UnsafeBufferPointer<UInt8>
            var offset = 0

            public mutating func next() -> UnsafeBufferPointer<UInt8>? {
                guard offset < bytes.count else { return nil }
                let length = Int(Int64(littleEndian: UnsafeRawBufferPointer(bytes).loadUnaligned(
                    fromByteOffset: offset, as: Int64.self)))
                defer { offset += 8 + length }
                return UnsafeBufferPointer(rebasing: bytes[offset + 8..<offset + 8 + length])
            }
        }
    }

    /// The download as a value, its strings copied out of the frame.
    public var download: Download {
        func text(_ bytes: UnsafeBufferPointer<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
        return Download(
            kind: kind, identifier: text(identifier), uniqueIdentifier: uniqueIdentifier.map(text), url: url.map(text),
            applicationGroupIdentifier: text(applicationGroupIdentifier), fileSize: fileSize, priority: priority,
            state: state, isEssential: isEssential, sha256: sha256.map(text), httpHeaders: httpHeaders.map(text))
    }
}
