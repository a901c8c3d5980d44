import CArchive
import Foundation
import Packs

/// Writing a pack archive (`bahost pack package` and `evaluate`): only the command line links it; the service only
/// reads and checks archives (`PackArchive` in Packs).
extension PackArchive {
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
}
