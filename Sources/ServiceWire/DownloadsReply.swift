import Vocabulary

/// The service's reply to `currentDownloads`, kept as its compact frame and read where it is used: the language
/// bindings (`ba/app.h`) copy its downloads straight from the frame into C memory, where making a `Download` of each
/// first (its strings, its header array) and then unmaking it was most of an app's long fetch
/// (docs/performance/DECISIONS.md #38).
public struct DownloadsReply: Sendable {
    /// The request it answers.
    public let id: UInt64
    /// How many downloads it holds.
    public let count: Int
    private let frame: Frame

    /// `frame` if it is a compact reply to `currentDownloads`, else nil. Only its head is read here: its downloads
    /// are checked as they are read.
    /// A reply read from bytes of another kind than a `Frame` (a copy is made of them).
    public init?(frame bytes: some Collection<UInt8>) {
        self.init(owned: bytes as? Frame ?? Frame(bytes))
    }

    private init?(owned frame: Frame) {
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

    /// Calls `body` with each download read in place, in order: its strings point into the frame (checked to be
    /// UTF-8, not NUL-terminated; its header lines are made strings), and live only during the call. Throws `ServiceWireError.protocolViolation` for a
    /// frame that lies (a length past its end, text that is not UTF-8, bytes after the last download), which may come
    /// after `body` saw the downloads before it.
    public func forEach(_ body: (DownloadInPlace) throws -> Void) throws {
        try frame.withUnsafeBytes { raw in
            var reader = CompactReader(raw.assumingMemoryBound(to: UInt8.self))
            _ = try reader.header()
            _ = try reader.count(each: 40)
            for _ in 0..<count { try body(try reader.downloadInPlace()) }
            try reader.end()
        }
    }
}

extension DownloadsReply {
    /// Writes a reply from downloads read in place, given in any order with the key that puts each in order: the
    /// service writes its reply to `fetchCurrentDownloads` from its queue's rows as SQLite finds them, without a
    /// `Download` of each (DECISIONS.md #38). The frame is byte for byte what `ServiceProtocol.encode` makes of the
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
        public func frame(answering id: UInt64) -> Frame {
            // The header of `CompactWriter.encode`'s reply of downloads, then the downloads (less the tag written).
            let frame = CompactWriter(capacity: 1 + 9 + 8 + written.used - 1)
            frame.header(.replyDownloads, id).count(entries.count)
            for entry in entries.sorted(by: { $0.key < $1.key }) { frame.copy(entry.range, of: written) }
            return frame.finish()
        }
    }
}
