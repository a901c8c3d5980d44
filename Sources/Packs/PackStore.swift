import CHostSupport
import Foundation

/// A managed app's installed asset packs on disk: one folder per pack under `root`, each holding the pack's files and,
/// in `.bapack/installed.json`, the version and index it was installed from. All packs together form the one
/// namespace that `AssetPackManager` reads.
///
/// A pack is installed whole or not at all: it is unpacked and checked in `.staging/`, synced, then swapped with its
/// installed folder in one `renameat2(RENAME_EXCHANGE)`, so that a reader (or a kill at any moment) sees the old
/// version or the new one, never a mix. What a kill leaves in `.staging/` (an unfinished unpacking, or the previous
/// version swapped out) is removed by `removeLeftovers()` at the next start.
public struct PackStore: Sendable {
    public let root: URL

    /// An installed pack.
    public struct Installed: Sendable, Hashable, Codable {
        public var id: String
        public var version: Int
        public var files: [PackFile]
        /// (27) A localized pack's language.
        public var language: String?

        public var size: Int64 { files.reduce(0) { $0 + $1.size } }

        /// Whether `entry` is newer than this: a higher version, or other files under the same one (a server that
        /// numbers versions afresh, such as a restarted `bahost serve`, still replaced the pack).
        public func isOutdated(by entry: DownloadManifest.Entry) -> Bool {
            version < entry.version || files != entry.files
        }
    }

    public init(root: URL) {
        self.root = root
    }

    private var staging: URL { root.appendingPathComponent(".staging", isDirectory: true) }

    public func folder(of id: String) -> URL { root.appendingPathComponent(id, isDirectory: true) }

    /// Unpacks `archive` (the download of `entry`, already checked against its size and hash), checks every file
    /// against the entry's index, and swaps it in as the pack's installed version.
    @discardableResult
    public func install(archive: String, entry: DownloadManifest.Entry) throws(PackError) -> Installed {
        try install(try unpack(entry: entry) { staging throws(PackError) in
            try PackArchive.extract(archive, expected: entry.index, into: staging)
        }, entry: entry)
    }

    /// Unpacks the archive of `entry` as it arrives, checking every file against the entry's index, into a folder of
    /// the staging area that `install(_:entry:)` then swaps in (or that the next start removes).
    public func unpack(_ archive: GrowingArchive, entry: DownloadManifest.Entry) throws(PackError) -> URL {
        try unpack(entry: entry) { staging throws(PackError) in
            try PackArchive.extract(archive, expected: entry.index, into: staging)
        }
    }

    /// Swaps in what `unpack` made as the pack's installed version, synced first.
    @discardableResult
    public func install(_ unpacked: URL, entry: DownloadManifest.Entry) throws(PackError) -> Installed {
        do throws(PackError) {
            let installed = Installed(id: entry.id, version: entry.version, files: entry.files, language: entry.language)
            try record(installed, in: unpacked)
            try sync(unpacked)
            try swapIn(unpacked, as: folder(of: entry.id))
            return installed
        } catch {
            try? FileManager.default.removeItem(at: unpacked)
            throw error
        }
    }

    private func unpack(entry: DownloadManifest.Entry, _ extract: (URL) throws(PackError) -> Void) throws(PackError) -> URL {
        try PackManifest.validate(id: entry.id)
        try makeFolder(staging)
        let unpacked = staging.appendingPathComponent("\(entry.id).\(entry.version).\(UUID().uuidString)")
        do throws(PackError) {
            try extract(unpacked)
            return unpacked
        } catch {
            try? FileManager.default.removeItem(at: unpacked)
            throw error
        }
    }

    /// Installs a new version of an installed pack from the files that changed (`changed`: pack path → a
    /// downloaded file, already checked against its size and hash) and the installed version's other files, each
    /// checked again against the new index: the app may have changed a file in its container. The result is swapped
    /// in whole, as an archive's is.
    @discardableResult
    public func installUpdate(entry: DownloadManifest.Entry, changed: [String: String]) throws(PackError) -> Installed {
        try PackManifest.validate(id: entry.id)
        let current = folder(of: entry.id)
        try makeFolder(staging)
        let assembled = staging.appendingPathComponent("\(entry.id).\(entry.version).\(UUID().uuidString)")
        do throws(PackError) {
            for file in entry.files {
                let path = try PackPath(file.path)
                let target = assembled.appendingPathComponent(path.description)
                try makeFolder(target.deletingLastPathComponent())
                let source = changed[file.path] ?? current.appendingPathComponent(path.description).path
                // A hard link costs nothing and the old folder goes anyway; a copy where links are not possible.
                if link(source, target.path) != 0 {
                    do {
                        try FileManager.default.copyItem(atPath: source, toPath: target.path)
                    } catch {
                        throw PackError.io("cannot take \(file.path) for the update: \(error.localizedDescription)")
                    }
                }
                let (size, hash) = try PackArchive.hashFile(target)
                guard size == file.size, hash == file.sha256.lowercased() else {
                    throw PackError.hostileArchive(
                        "\(PackError.quoted(file.path)) is not the file the download manifest lists (\(size) bytes, SHA-256 \(hash))")
                }
            }
            let installed = Installed(id: entry.id, version: entry.version, files: entry.files, language: entry.language)
            try record(installed, in: assembled)
            try sync(assembled)
            try swapIn(assembled, as: current)
            return installed
        } catch {
            try? FileManager.default.removeItem(at: assembled)
            throw error
        }
    }

    /// Every installed pack, by ID.
    public func installed() -> [String: Installed] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        var packs: [String: Installed] = [:]
        for name in names where !name.hasPrefix(".") {
            if let pack = installed(name) { packs[name] = pack }
        }
        return packs
    }

    /// The installed pack `id`, or nil.
    public func installed(_ id: String) -> Installed? {
        let record = folder(of: id).appendingPathComponent(".bapack/installed.json")
        guard let data = FileManager.default.contents(atPath: record.path) else { return nil }
        return try? JSONDecoder().decode(Installed.self, from: data)
    }

    /// Removes a pack: it leaves the namespace in one rename, then its files are deleted.
    public func remove(_ id: String) throws(PackError) {
        try PackManifest.validate(id: id)
        let current = folder(of: id)
        guard FileManager.default.fileExists(atPath: current.path) else { return }
        try makeFolder(staging)
        let doomed = staging.appendingPathComponent("\(id).removed.\(UUID().uuidString)")
        guard rename(current.path, doomed.path) == 0 else {
            throw .io("cannot remove the pack '\(id)': \(String(cString: strerror(errno)))")
        }
        try? FileManager.default.removeItem(at: doomed)
    }

    /// Moves a file of the same file system into `.staging/`, to be deleted when convenient (by the next start's
    /// `removeLeftovers` if not before); its new place, or nil when it could not be moved.
    public func discard(_ path: String) -> URL? {
        guard (try? makeFolder(staging)) != nil else { return nil }
        let target = staging.appendingPathComponent("discarded.\(UUID().uuidString)")
        return rename(path, target.path) == 0 ? target : nil
    }

    /// Deletes what a killed install or removal left in `.staging/`.
    public func removeLeftovers() {
        try? FileManager.default.removeItem(at: staging)
    }

    // MARK: Steps

    /// Writes what a folder about to be swapped in holds, in its `.bapack/installed.json`.
    private func record(_ installed: Installed, in folder: URL) throws(PackError) {
        try makeFolder(folder.appendingPathComponent(".bapack"))
        let data: Data
        do {
            data = try JSONEncoder().encode(installed)
        } catch {
            throw .io("cannot record the installed pack: \(error)")
        }
        guard FileManager.default.createFile(atPath: folder.appendingPathComponent(".bapack/installed.json").path, contents: data)
        else { throw .io("cannot record the installed pack in \(folder.path)") }
        // The app's SDK reads a localized pack's language from this small file, not from the whole record.
        if let language = installed.language,
            !FileManager.default.createFile(atPath: folder.appendingPathComponent(".bapack/language").path, contents: Data(language.utf8))
        {
            throw .io("cannot record the installed pack's language in \(folder.path)")
        }
    }

    private func makeFolder(_ url: URL) throws(PackError) {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw .io("cannot make \(url.path): \(error.localizedDescription)")
        }
    }

    /// Writes what was unpacked to disk before it becomes visible: one `syncfs` rather than an `fsync` a file.
    private func sync(_ folder: URL) throws(PackError) {
        let fd = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("cannot open \(folder.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let status = bahost_sync_file_system(fd)
        guard status == 0 else { throw .io("cannot sync \(folder.path): \(String(cString: strerror(status)))") }
    }

    /// Makes `unpacked` the pack's folder in one step; a previous version ends up at `unpacked`'s path and is deleted.
    private func swapIn(_ unpacked: URL, as current: URL) throws(PackError) {
        let status: Int32
        if FileManager.default.fileExists(atPath: current.path) {
            status = bahost_exchange(unpacked.path, current.path)
        } else {
            status = rename(unpacked.path, current.path) == 0 ? 0 : errno
        }
        guard status == 0 else {
            throw .io("cannot swap in \(current.lastPathComponent): \(String(cString: strerror(status)))")
        }
        // The rename is durable once the folder holding it is synced.
        let fd = open(root.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
        try? FileManager.default.removeItem(at: unpacked)
    }
}
