import Foundation
import Packs

/// Making a download manifest from pack archives (`bahost pack manifest`, `bahost serve`): only the command line
/// links it.
extension DownloadManifest {
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
                language: index.manifest.language,
                bittorrent: try BitTorrentHashing.hashes(of: archive, size: size)))
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
}
