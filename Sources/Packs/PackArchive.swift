import CArchive
import CHostSupport
import Crypto
import Foundation

/// One file of a pack: where it goes in the shared namespace, its size and its SHA-256.
public struct PackFile: Sendable, Hashable, Codable {
    public var path: String
    public var size: Int64
    public var sha256: String

    public init(path: String, size: Int64, sha256: String) {
        self.path = path
        self.size = size
        self.sha256 = sha256
    }
}

/// What a pack archive says of itself, in its first entry (`.bapack/index.json`): the author's manifest and every
/// file with its size and hash.
public struct PackIndex: Sendable, Hashable, Codable {
    public var manifest: PackManifest
    public var files: [PackFile]

    public var installedSize: Int64 { files.reduce(0) { $0 + $1.size } }

    package init(manifest: PackManifest, files: [PackFile]) {
        self.manifest = manifest
        self.files = files
    }
}

/// A pack archive: a POSIX (pax) tar compressed with zstd, written and read with libarchive. Its first entry is the
/// index; then each file, sorted by path, as a regular file owned by nobody, dated 1970, mode 0644, so that the same
/// files always make the same archive (and the same archive hash, which is what makes a new version).
///
/// A tar that `tar --zstd -tf` lists, rather than Apple Archive (`.aar`, which has no Linux implementation): libarchive
/// is maintained, in every distribution, and reads it in a stream, so a pack is checked as it is unpacked.
public enum PackArchive {
    package static let indexPath = ".bapack/index.json"
    /// Largest index accepted: a pack of 100,000 files has an index of about 15 MB.
    public static let maximumIndexBytes = 32 << 20
    /// Largest author's manifest accepted.
    public static let maximumManifestBytes = 1 << 20

    // MARK: Hashing

    /// The size and SHA-256 (hex) of a file.
    public static func hashFile(_ url: URL) throws(PackError) -> (Int64, String) {
        guard let handle = FileHandle(forReadingAtPath: url.path) else { throw .unreadableSource("cannot open \(url.path)") }
        defer { try? handle.close() }
        var hasher = SHA256()
        var size: Int64 = 0
        while true {
            let chunk: Data
            do {
                chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            } catch {
                throw .unreadableSource("cannot read \(url.path): \(error)")
            }
            if chunk.isEmpty { break }
            hasher.update(data: chunk)
            size += Int64(chunk.count)
        }
        return (size, hasher.finalize().lowercaseHex)
    }

    // MARK: Reading

    /// The index of the archive at `path`, read from its first entry without unpacking the rest.
    public static func readIndex(_ path: String) throws(PackError) -> PackIndex {
        let reader = try Reader(path: path)
        return try reader.index()
    }

    /// Unpacks the archive at `path` into `staging` (a new, empty folder), checking it against `expected`: the index
    /// the download manifest promised, which is trusted over the one inside the archive. Every entry must be a
    /// regular file the index lists, once, with exactly its size and hash; nothing is written outside `staging`,
    /// and no more bytes than the index declares are ever read out of the archive. Files are not synced: the caller
    /// syncs the staging folder before it swaps it in.
    public static func extract(_ path: String, expected: PackIndex, into staging: URL) throws(PackError) {
        try extract(try Reader(path: path), expected: expected, into: staging)
    }

    /// Unpacks an archive as it arrives, as `extract(_:expected:into:)` does.
    public static func extract(_ source: GrowingArchive, expected: PackIndex, into staging: URL) throws(PackError) {
        try extract(try Reader(source: source), expected: expected, into: staging)
    }

    private static func extract(_ reader: Reader, expected: PackIndex, into staging: URL) throws(PackError) {
        let index = try reader.index()
        guard index.files == expected.files else {
            throw .hostileArchive(
                "the archive of '\(expected.manifest.assetPackID)' lists other files than its download manifest")
        }
        var remaining = Dictionary(expected.files.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        guard mkdir(staging.path, 0o755) == 0 || errno == EEXIST else {
            throw .io("cannot make \(staging.path): \(String(cString: strerror(errno)))")
        }
        while let entry = try reader.next() {
            let name = entry.path
            let path = try PackPath(name)
            guard entry.isRegularFile else {
                throw .hostileArchive("\(PackError.quoted(name)) is a link or a special file; a pack holds regular files only")
            }
            guard let file = remaining.removeValue(forKey: path.description), path.description == name else {
                throw .hostileArchive("\(PackError.quoted(name)) is not in the pack's index, or appears twice")
            }
            guard entry.size == file.size else {
                throw .hostileArchive("\(PackError.quoted(name)) is \(entry.size) bytes in the archive, not the \(file.size) declared")
            }
            try reader.unpack(file, to: staging, path: path)
        }
        if let missing = remaining.keys.sorted().first {
            throw .hostileArchive("the archive lacks \(PackError.quoted(missing)) (and \(remaining.count - 1) more)")
        }
    }

    /// Reads an archive entry by entry.
    final class Reader {

        private let archive: OpaquePointer
        private var indexRead = false

        struct Entry {
            var path: String
            var isRegularFile: Bool
            var size: Int64
        }

        /// Where a growing archive's bytes are read to, for libarchive; kept alive as long as the reader.
        private var source: (archive: GrowingArchive, buffer: UnsafeMutableRawBufferPointer)?

        init(path: String) throws(PackError) {
            archive = try Self.makeArchive()
            guard archive_read_open_filename(archive, path, 1 << 20) == ARCHIVE_OK else {
                throw .corruptArchive("\(path): \(errorString(archive))")
            }
        }

        init(source: GrowingArchive) throws(PackError) {
            archive = try Self.makeArchive()
            self.source = (source, .allocate(byteCount: 1 << 20, alignment: 16))
            let opened = archive_read_open(
                archive, Unmanaged.passUnretained(self).toOpaque(), nil,
                { _, reader, bytes in
                    let reader = Unmanaged<Reader>.fromOpaque(reader!).takeUnretainedValue()
                    guard let (archive, buffer) = reader.source, let count = archive.read(into: buffer) else {
                        return -1
                    }
                    bytes?.pointee = UnsafeRawPointer(buffer.baseAddress)
                    return count
                }, nil)
            guard opened == ARCHIVE_OK else { throw .corruptArchive("the archive as it arrives: \(errorString(archive))") }
        }

        private static func makeArchive() throws(PackError) -> OpaquePointer {
            guard let archive = archive_read_new() else { throw .io("libarchive could not start a reader") }
            archive_read_support_filter_zstd(archive)
            archive_read_support_filter_none(archive)
            archive_read_support_format_tar(archive)
            return archive
        }

        /// Where entries' data is read to, reused for every read: a file's bytes are hashed and written from it.
        private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)

        deinit {
            archive_read_free(archive)
            buffer.deallocate()
            source?.buffer.deallocate()
        }

        func next() throws(PackError) -> Entry? {
            var entry: OpaquePointer?
            let status = archive_read_next_header(archive, &entry)
            if status == ARCHIVE_EOF { return nil }
            guard status >= ARCHIVE_WARN, let entry else { throw .corruptArchive(errorString(archive)) }
            let name = archive_entry_pathname_utf8(entry).map { String(cString: $0) }
                ?? archive_entry_pathname(entry).map { String(cString: $0) } ?? ""
            let isLink = archive_entry_hardlink(entry) != nil || archive_entry_symlink(entry) != nil
            return Entry(
                path: name, isRegularFile: !isLink && archive_entry_filetype(entry) == regularFile,
                size: archive_entry_size_is_set(entry) != 0 ? archive_entry_size(entry) : -1)
        }

        /// The first entry, which must be the index.
        func index() throws(PackError) -> PackIndex {
            guard !indexRead else { throw .io("the index was already read") }
            indexRead = true
            guard let entry = try next(), entry.path == PackArchive.indexPath, entry.isRegularFile else {
                throw .corruptArchive("the first entry is not \(PackArchive.indexPath): not an archive `bahost pack` wrote")
            }
            guard entry.size >= 0, entry.size <= PackArchive.maximumIndexBytes else {
                throw .hostileArchive("the index is larger than \(PackArchive.maximumIndexBytes) bytes")
            }
            var data = Data()
            try read(upTo: entry.size) { data.append(contentsOf: $0) }
            let index: PackIndex
            do {
                index = try JSONDecoder().decode(PackIndex.self, from: data)
            } catch {
                throw .corruptArchive("the index cannot be read: \(describe(error))")
            }
            try index.manifest.validate()
            var seen = Set<String>()
            for file in index.files {
                let path = try PackPath(file.path)
                guard path.description == file.path, file.size >= 0, seen.insert(file.path).inserted else {
                    throw .hostileArchive("the index lists \(PackError.quoted(file.path)) twice, unnormalized, or with a negative size")
                }
            }
            return index
        }

        /// Streams the current entry into `staging/path`, checking its size and hash as it goes.
        func unpack(_ file: PackFile, to staging: URL, path: PackPath) throws(PackError) {
            var folder = staging.path
            for component in path.components.dropLast() {
                folder += "/" + component
                guard mkdir(folder, 0o755) == 0 || errno == EEXIST else {
                    throw .io("cannot make \(folder): \(String(cString: strerror(errno)))")
                }
            }
            let target = staging.path + "/" + path.description
            // Nothing in staging is a link (nothing but regular files and folders is ever made there), and O_EXCL
            // with O_NOFOLLOW refuses to follow or reuse one anyway.
            let fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                throw errno == EEXIST || errno == ELOOP || errno == ENOTDIR
                    ? .hostileArchive("\(PackError.quoted(path.description)) collides with a folder or file of the pack")
                    : .io("cannot write \(target): \(String(cString: strerror(errno)))")
            }
            defer { close(fd) }
            var hasher = SHA256()
            var failure: PackError?
            // Handed to the disk as it is written (a large file in steps, as a download is), while the rest unpacks:
            // the sync before the swap then waits for little.
            var written: Int64 = 0
            var writtenBack: Int64 = 0
            try read(upTo: file.size) { chunk in
                guard failure == nil else { return }
                hasher.update(bufferPointer: chunk)
                if Glibc.write(fd, chunk.baseAddress, chunk.count) != chunk.count {
                    failure = .io("cannot write \(target): \(String(cString: strerror(errno)))")
                }
                written += Int64(chunk.count)
                bahost_write_behind(fd, &writtenBack, written, false)
            }
            if let failure { throw failure }
            bahost_write_behind(fd, &writtenBack, written, true)
            let actual = hasher.finalize().lowercaseHex
            guard actual == file.sha256.lowercased() else {
                throw .hostileArchive("\(PackError.quoted(path.description)) has SHA-256 \(actual), not the declared \(file.sha256)")
            }
        }

        /// Reads the current entry's data, never more than `limit` bytes: a body longer than its header says is refused.
        private func read(upTo limit: Int64, _ body: (UnsafeRawBufferPointer) -> Void) throws(PackError) {
            var total: Int64 = 0
            while true {
                let got = archive_read_data(archive, buffer.baseAddress, buffer.count)
                if got == 0 { break }
                guard got > 0 else { throw .corruptArchive(errorString(archive)) }
                total += Int64(got)
                guard total <= limit else { throw .hostileArchive("an entry holds more than the \(limit) bytes it declares") }
                body(UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
            }
            guard total == limit else { throw .corruptArchive("an entry ends after \(total) of its \(limit) bytes") }
        }
    }

    // MARK: Helpers

    /// `AE_IFREG`, which Swift does not import (a cast macro).
    package static let regularFile: UInt32 = 0o100000

    package static func errorString(_ archive: OpaquePointer) -> String {
        PackError.quoted(archive_error_string(archive).map { String(cString: $0) } ?? "unknown libarchive error")
    }

    package static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context), DecodingError.keyNotFound(_, let context),
            DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }
}
