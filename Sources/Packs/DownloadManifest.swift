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
        /// The archive's BitTorrent v2 hashes: what machines on one network would share it under. Without them the
        /// archive is only ever fetched from its URL.
        public var bittorrent: BitTorrentHashes?

        package init(
            id: String, version: Int, downloadPolicy: DownloadPolicy, platforms: [String], userInfo: JSONValue?,
            url: String, downloadSize: Int64, sha256: String, files: [PackFile], fileBaseURL: String?,
            language: String?, bittorrent: BitTorrentHashes? = nil
        ) {
            self.bittorrent = bittorrent
            self.id = id
            self.version = version
            self.downloadPolicy = downloadPolicy
            self.platforms = platforms
            self.userInfo = userInfo
            self.url = url
            self.downloadSize = downloadSize
            self.sha256 = sha256
            self.files = files
            self.fileBaseURL = fileBaseURL
            self.language = language
        }

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
            try pack.bittorrent?.validate(size: pack.downloadSize, pack: pack.id)
            var paths = Set<String>()
            for file in pack.files {
                let path = try PackPath(file.path)
                guard path.description == file.path, file.size >= 0, paths.insert(file.path).inserted else {
                    throw .invalidManifest("the pack '\(pack.id)' lists \(PackError.quoted(file.path)) twice or unnormalized")
                }
            }
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
