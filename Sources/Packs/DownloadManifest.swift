import Crypto
import Foundation
import Vocabulary

/// What a server offers: every pack with its version, policy, archive and files. `bahost pack download-manifest
/// create` writes it; an app's `BAManifestURL` names it; the service reads it to install, update and remove packs.
///
/// Each pack's archive is served at the base URL followed by the pack's ID, as Apple's tools do.
public struct DownloadManifest: Sendable, Hashable, Codable {
    public static let currentFormat = 1
    /// Largest download manifest accepted.
    public static let maximumBytes = 64 << 20

    public var formatVersion: Int
    public var assetPacks: [Entry]
    /// (27) The language the app's localized packs fall back to when none of the user's preferred languages is
    /// offered; nil when no pack is localized.
    public var primaryLanguage: String?

    public struct Entry: Sendable, Hashable, Codable {
        public var id: String
        /// Raised each time the pack's archive changes.
        public var version: Int
        public var downloadPolicy: DownloadPolicy
        public var platforms: [String]
        public var userInfo: JSONValue?
        public var url: String
        /// The archive's size on the wire.
        public var downloadSize: Int64
        public var sha256: String
        public var files: [PackFile]
        /// Where each file is also served alone, at this URL followed by its SHA-256, when the server offers that:
        /// an update then fetches only the files that changed (a bahost addition; `--file-objects`).
        public var fileBaseURL: String?
        /// (27) The language of a localized pack; nil for every language.
        public var language: String?

        /// The files an update from `installed` needs: those whose path or content changed.
        public func changedFiles(since installed: [PackFile]) -> [PackFile] {
            let kept = Set(installed.map { "\($0.path)\u{0}\($0.sha256)" })
            return files.filter { !kept.contains("\($0.path)\u{0}\($0.sha256)") }
        }

        /// The index the archive must match.
        public var index: PackIndex {
            PackIndex(
                manifest: PackManifest(
                    assetPackID: id, downloadPolicy: downloadPolicy, fileSelectors: [], platforms: platforms,
                    userInfo: userInfo, language: language),
                files: files)
        }
    }

    public init(assetPacks: [Entry], primaryLanguage: String? = nil) {
        formatVersion = Self.currentFormat
        self.assetPacks = assetPacks
        self.primaryLanguage = primaryLanguage
    }

    /// The languages the localized packs offer.
    public var availableLanguages: Set<String> { Set(assetPacks.compactMap(\.language)) }

    /// Decodes and checks a download manifest from a server: a format this bahost reads, valid IDs, each pack once,
    /// sane sizes and paths, URLs over http(s).
    public init(data: Data) throws(PackError) {
        guard data.count <= Self.maximumBytes else {
            throw .invalidManifest("the download manifest is larger than \(Self.maximumBytes) bytes")
        }
        do {
            self = try JSONDecoder().decode(Self.self, from: data)
        } catch {
            throw .invalidManifest("the download manifest cannot be read: \(PackArchive.describe(error))")
        }
        try validate()
    }

    public func validate() throws(PackError) {
        guard formatVersion == Self.currentFormat else {
            throw .invalidManifest("download manifest format \(formatVersion); this bahost reads \(Self.currentFormat)")
        }
        var seen = Set<String>()
        for pack in assetPacks {
            try PackManifest.validate(id: pack.id)
            guard seen.insert(pack.id).inserted else {
                throw .invalidManifest("the download manifest names the pack '\(pack.id)' twice")
            }
            try pack.downloadPolicy.validate()
            guard pack.version >= 1, pack.downloadSize > 0, pack.sha256.count == 64,
                pack.url.hasPrefix("https://") || pack.url.hasPrefix("http://")
            else {
                throw .invalidManifest("the pack '\(pack.id)' needs a version ≥ 1, a size, a SHA-256 and an http(s) URL")
            }
            if let language = pack.language { try PackManifest.validate(language: language) }
            var paths = Set<String>()
            for file in pack.files {
                let path = try PackPath(file.path)
                guard path.description == file.path, file.size >= 0, paths.insert(file.path).inserted else {
                    throw .invalidManifest("the pack '\(pack.id)' lists \(PackError.quoted(file.path)) twice or unnormalized")
                }
            }
        }
    }

    /// The download manifest for `archives`, each served at `baseURL` + its pack ID. `primaryLanguage` must be one
    /// the localized packs offer; by default the first of them in order. A pack also in `previous`
    /// keeps its version when its archive is the same and gets the next one when it changed; a new pack starts at 1.
    /// With `fileObjects`, each pack's files are also written there, one file per content (`PACK-ID.files/SHA-256`),
    /// to be served beside the archives, so that updates fetch only what changed.
    public static func create(
        archives: [String], baseURL: String, previous: DownloadManifest?, fileObjects: URL? = nil,
        primaryLanguage: String? = nil
    ) throws(PackError) -> DownloadManifest {
        guard let base = URL(string: baseURL), base.scheme == "https" || base.scheme == "http", base.host != nil else {
            throw .invalidManifest("--download-base-url must be an http(s) URL, not \(PackError.quoted(baseURL))")
        }
        let prefix = baseURL.hasSuffix("/") ? baseURL : baseURL + "/"
        var entries: [Entry] = []
        var sources: [String: String] = [:]
        for archive in archives {
            let index = try PackArchive.readIndex(archive)
            let id = index.manifest.assetPackID
            if let other = sources.updateValue(archive, forKey: id) {
                throw .invalidManifest("the pack '\(id)' is named twice: \(other) and \(archive)")
            }
            let (size, hash) = try PackArchive.hashFile(URL(fileURLWithPath: archive))
            let before = previous?.assetPacks.first { $0.id == id }
            let version = before.map { $0.sha256 == hash ? $0.version : $0.version + 1 } ?? 1
            var fileBaseURL: String?
            if let fileObjects {
                try writeFileObjects(of: archive, index: index, into: fileObjects.appendingPathComponent("\(id).files"))
                fileBaseURL = prefix + id + ".files/"
            }
            entries.append(Entry(
                id: id, version: version, downloadPolicy: index.manifest.downloadPolicy,
                platforms: index.manifest.platforms, userInfo: index.manifest.userInfo, url: prefix + id,
                downloadSize: size, sha256: hash, files: index.files, fileBaseURL: fileBaseURL,
                language: index.manifest.language))
        }
        let languages = Set(entries.compactMap(\.language))
        if let primaryLanguage, !languages.contains(primaryLanguage) {
            throw .invalidManifest(
                "--primary-language \(PackError.quoted(primaryLanguage)) is not the language of any pack (\(languages.sorted().joined(separator: ", ")))")
        }
        let manifest = DownloadManifest(
            assetPacks: entries.sorted { $0.id < $1.id }, primaryLanguage: primaryLanguage ?? languages.sorted().first)
        try manifest.validate()
        return manifest
    }

    /// Unpacks `archive` (checked as any install is) and files each file under its SHA-256 in `folder`.
    static func writeFileObjects(of archive: String, index: PackIndex, into folder: URL) throws(PackError) {
        let staging = folder.deletingLastPathComponent().appendingPathComponent(".unpacking-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: staging) }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw .io("cannot make \(folder.path): \(error)")
        }
        try PackArchive.extract(archive, expected: index, into: staging)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for file in index.files {
                let target = folder.appendingPathComponent(file.sha256)
                if FileManager.default.fileExists(atPath: target.path) { continue }
                try FileManager.default.moveItem(at: staging.appendingPathComponent(file.path), to: target)
            }
        } catch {
            throw .io("cannot write the file objects of \(archive) into \(folder.path): \(error)")
        }
    }

    public func encoded() throws(PackError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        do {
            return try encoder.encode(self)
        } catch {
            throw .io("cannot encode the download manifest: \(error)")
        }
    }
}
