// Over 400 lines: writing, checking and unpacking an archive share libarchive's handling of entries and errors.
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
}

/// A pack archive: a POSIX (pax) tar compressed with zstd, written and read with libarchive. Its first entry is the
/// index; then each file, sorted by path, as a regular file owned by nobody, dated 1970, mode 0644, so that the same
/// files always make the same archive (and the same archive hash, which is what makes a new version).
///
/// A tar that `tar --zstd -tf` lists, rather than Apple Archive (`.aar`, which has no Linux implementation): libarchive
/// is maintained, in every distribution, and reads it in a stream, so a pack is checked as it is unpacked.
public enum PackArchive {
    static let indexPath = ".bapack/index.json"
    /// Largest index accepted: a pack of 100,000 files has an index of about 15 MB.
    public static let maximumIndexBytes = 32 << 20
    /// Largest author's manifest accepted.
    public static let maximumManifestBytes = 1 << 20

    // MARK: Writing

    /// Reads the author's manifest at `manifestPath`, gathers the files it selects (relative to its folder), and
    /// writes the archive to `output` (atomically). `progress` is called after each file with the bytes written.
    @discardableResult
    public static func package(
        manifestPath: String, output: String, progress: (_ files: Int, _ bytes: Int64) -> Void = { _, _ in }
    ) throws(PackError) -> PackIndex {
        let manifest = try loadManifest(manifestPath)
        let sources = try gather(manifest.fileSelectors, under: sourceRoot(of: manifest, at: manifestPath))
        var files: [PackFile] = []
        for (path, url) in sources {
            let (size, hash) = try hashFile(url)
            files.append(PackFile(path: path.description, size: size, sha256: hash))
        }
        let index = PackIndex(manifest: manifest, files: files)
        let temporary = output + ".partial"
        do {
            try write(index, sources: sources.map(\.1), to: temporary, progress: progress)
        } catch {
            unlink(temporary)
            throw error
        }
        guard rename(temporary, output) == 0 else {
            unlink(temporary)
            throw .io("cannot write \(output): \(String(cString: strerror(errno)))")
        }
        return index
    }

    /// The folder a manifest's selectors start from: its `sourceRoot` under the manifest's folder, or that folder.
    public static func sourceRoot(of manifest: PackManifest, at manifestPath: String) -> URL {
        let folder = URL(fileURLWithPath: manifestPath).deletingLastPathComponent()
        return manifest.sourceRoot.map { folder.appendingPathComponent($0, isDirectory: true) } ?? folder
    }

    /// What `package` would put in the pack, without writing it: each file's pack path, source and size
    /// (`bahost pack evaluate`).
    public static func evaluate(manifestPath: String) throws(PackError) -> (PackManifest, [(path: String, source: String, size: Int64)]) {
        let manifest = try loadManifest(manifestPath)
        let sources = try gather(manifest.fileSelectors, under: sourceRoot(of: manifest, at: manifestPath))
        return (manifest, sources.map { path, url in
            var info = stat()
            _ = lstat(url.path, &info)
            return (path.description, url.path, Int64(info.st_size))
        })
    }

    /// Reads and checks an author's pack manifest.
    public static func loadManifest(_ path: String) throws(PackError) -> PackManifest {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .unreadableSource("cannot read the manifest \(path)")
        }
        guard data.count <= maximumManifestBytes else {
            throw .invalidManifest("\(path) is larger than \(maximumManifestBytes) bytes")
        }
        let manifest: PackManifest
        do {
            manifest = try JSONDecoder().decode(PackManifest.self, from: data)
        } catch {
            throw .invalidManifest("\(path): \(describe(error))")
        }
        try manifest.validate()
        return manifest
    }

    /// The regular files the selectors name, by pack path, sorted; a link or a special file is refused, and so are
    /// two different files for one pack path. Exclusions apply last, to pack paths.
    static func gather(_ selectors: [FileSelector], under root: URL) throws(PackError) -> [(PackPath, URL)] {
        var found: [PackPath: URL] = [:]
        func add(_ relative: String, as packPath: String) throws(PackError) {
            _ = try PackPath(relative)
            let path = try PackPath(packPath)
            let url = root.appendingPathComponent(relative)
            var info = stat()
            guard lstat(url.path, &info) == 0 else { throw .unreadableSource("\(relative): \(String(cString: strerror(errno)))") }
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw .unreadableSource("\(relative) is not a regular file (links and special files are not packed)")
            }
            if let other = found.updateValue(url, forKey: path), other.standardizedFileURL != url.standardizedFileURL {
                throw .invalidManifest("two files go to \(PackError.quoted(packPath)) in the pack")
            }
        }
        /// The paths of the files under `relative` (a folder), relative to it.
        func walk(_ relative: String) throws(PackError) -> [String] {
            let folder = relative.isEmpty ? root : root.appendingPathComponent(relative)
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder), isFolder.boolValue else {
                throw .unreadableSource("\(relative.isEmpty ? root.path : relative) is not a folder")
            }
            guard let walker = FileManager.default.enumerator(atPath: folder.path) else {
                throw .unreadableSource("cannot list \(relative)")
            }
            var inner: [String] = []
            for case let name as String in walker {
                var info = stat()
                if lstat(folder.appendingPathComponent(name).path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { continue }
                inner.append(name)
            }
            return inner
        }
        func joined(_ folder: String, _ name: String) -> String { folder.hasSuffix("/") ? folder + name : folder + "/" + name }
        var exclusions: [String] = []
        for selector in selectors {
            switch selector {
            case .file(let relative):
                try add(relative, as: relative)
            case .fileSource(let source, let destination):
                try add(source, as: destination)
            case .directory(let relative):
                _ = try PackPath(relative)
                for inner in try walk(relative) { try add(joined(relative, inner), as: joined(relative, inner)) }
            case .directorySource(let source, let destination):
                _ = try PackPath(source)
                for inner in try walk(source) { try add(joined(source, inner), as: joined(destination, inner)) }
            case .filePattern(let pattern):
                for inner in try walk("") where Glob(pattern).matches(inner) { try add(inner, as: inner) }
            case .fileExclusion(let pattern):
                exclusions.append(pattern)
            }
        }
        for pattern in exclusions {
            let glob = Glob(pattern)
            found = found.filter { !glob.matches($0.key.description) }
        }
        return found.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

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

    private static func write(
        _ index: PackIndex, sources: [URL], to path: String, progress: (Int, Int64) -> Void
    ) throws(PackError) {
        guard let archive = archive_write_new() else { throw .io("libarchive could not start a writer") }
        defer { archive_write_free(archive) }
        func check(_ status: Int32, _ what: String) throws(PackError) {
            guard status >= ARCHIVE_WARN else { throw .io("\(what): \(errorString(archive))") }
        }
        try check(archive_write_set_format_pax_restricted(archive), "tar format")
        try check(archive_write_add_filter_zstd(archive), "zstd")
        try check(archive_write_open_filename(archive, path), "cannot write \(path)")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let indexData: Data
        do {
            indexData = try encoder.encode(index)
        } catch {
            throw .io("cannot encode the index: \(error)")
        }
        try writeEntry(archive, path: indexPath, size: Int64(indexData.count)) { write throws(PackError) in
            try write(indexData)
        }
        var written: Int64 = 0
        for (number, (file, source)) in zip(index.files, sources).enumerated() {
            guard let handle = FileHandle(forReadingAtPath: source.path) else {
                throw .unreadableSource("cannot open \(source.path)")
            }
            defer { try? handle.close() }
            var copied: Int64 = 0
            try writeEntry(archive, path: file.path, size: file.size) { write throws(PackError) in
                while copied < file.size {
                    let chunk: Data
                    do {
                        chunk = try handle.read(upToCount: Int(min(1 << 20, file.size - copied))) ?? Data()
                    } catch {
                        throw .unreadableSource("cannot read \(source.path): \(error)")
                    }
                    guard !chunk.isEmpty else { throw .unreadableSource("\(source.path) shrank while it was packed") }
                    try write(chunk)
                    copied += Int64(chunk.count)
                }
            }
            written += file.size
            progress(number + 1, written)
        }
        try check(archive_write_close(archive), "cannot finish \(path)")
    }

    private static func writeEntry(
        _ archive: OpaquePointer, path: String, size: Int64,
        body: (_ write: (Data) throws(PackError) -> Void) throws(PackError) -> Void
    ) throws(PackError) {
        guard let entry = archive_entry_new() else { throw .io("libarchive could not make an entry") }
        defer { archive_entry_free(entry) }
        archive_entry_set_pathname_utf8(entry, path)
        archive_entry_set_size(entry, size)
        archive_entry_set_filetype(entry, regularFile)
        archive_entry_set_perm(entry, 0o644)
        archive_entry_set_mtime(entry, 0, 0)
        guard archive_write_header(archive, entry) >= ARCHIVE_WARN else { throw .io("\(path): \(errorString(archive))") }
        try body { data throws(PackError) in
            let wrote = data.withUnsafeBytes { archive_write_data(archive, $0.baseAddress, $0.count) }
            guard wrote == data.count else { throw .io("\(path): \(errorString(archive))") }
        }
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
    static let regularFile: UInt32 = 0o100000

    static func errorString(_ archive: OpaquePointer) -> String {
        PackError.quoted(archive_error_string(archive).map { String(cString: $0) } ?? "unknown libarchive error")
    }

    static func describe(_ error: any Error) -> String {
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
