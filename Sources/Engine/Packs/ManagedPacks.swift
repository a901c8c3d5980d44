import ExtensionRuntime
import Foundation
import HostVocabulary
import Packs
import Queue
import Transfer
import Vocabulary

/// A managed app's asset packs (`BAHasManagedAssetPacks`): the host, not the extension, decides what to download.
///
/// A content request fetches the app's download manifest (`BAManifestURL`) under the same policy as an unmanaged
/// manifest, keeps it as the app's catalogue, and queues each pack's archive as a download of its own:
/// - on install (`firstInstallation`) and update (`subsequentUpdate`), the essential and prefetch packs that name the
///   event; essential ones are essential downloads, which the app's launch waits for;
/// - on any request, a newer version of every installed pack (or other files under the same version), as the
///   changed files alone when the server offers them;
/// - on-demand packs only when the app asks.
///
/// A finished archive is then checked against the catalogue and installed whole (`PackStore`) before its
/// completion counts as delivered, so that an essential pack is on disk before the app may launch.
struct ManagedPacks {
    let store: QueueStore
    let dataRoot: DataRoot
    let blocking: BlockingPool
    let streamedUnpacks: StreamedUnpacks
    let launchGate: LaunchGate
    /// What hears of the packs queued (`queueChanged`).
    let events: EngineEvents
    let observe: LifecycleObserver

    /// What a managed content request did.
    struct Result: Sendable {
        /// The download manifest's packs offered to this platform.
        var offered: Int
        /// Pack downloads queued by this request.
        var queued: Int
    }

    /// The app's catalogue: the download manifest last fetched, or nil before the first.
    func catalogue(for app: AppRecord) -> DownloadManifest? {
        FileManager.default.contents(atPath: dataRoot.packCatalogue(for: app.appIdentifier).path)
            .flatMap { try? DownloadManifest(data: $0) }
    }

    func packStore(for app: AppRecord) -> PackStore {
        PackStore(root: dataRoot.assetPacks(for: app.appGroupIdentifier))
    }

    /// Fetches the download manifest and queues the packs the request downloads. Nil when the manifest could not be
    /// fetched or read (the failure is recorded as the manifest's, as for an unmanaged app).
    /// - Parameters:
    ///   - manifests: fetches the download manifest; `windows`: asks the extension about each pack.
    func run(
        _ request: ContentRequest, appIdentifier: String, manifests: ManifestFetch, windows: WindowLauncher
    ) async throws -> Result? {
        let rows = store
        guard let app = try rows.app(appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
        try dataRoot.prepare(appGroupIdentifier: app.appGroupIdentifier)
        let manifest: DownloadManifest
        switch await manifests.fetch(for: app) {
        case .success(let path):
            defer { unlink(path) }
            do {
                manifest = try DownloadManifest(data: Data(contentsOf: URL(fileURLWithPath: path)))
                try save(manifest, for: app)
            } catch {
                try refuseManifest(app, HostError.bahost("\(error)"))
                return nil
            }
        case .failure(let error):
            try refuseManifest(app, error)
            return nil
        }
        let installed = packStore(for: app).installed()
        let event: DownloadPolicy.InstallationEvent? =
            switch request {
            case .install: .firstInstallation
            case .update: .subsequentUpdate
            default: nil
            }
        let active = Set(try rows.activeDownloads(for: appIdentifier).map(\.identifier))
        let offered = manifest.assetPacks.filter { $0.index.manifest.isForLinux }
        let language = try resolvedLanguage(app, manifest)
        var candidates: [(DownloadManifest.Entry, essential: Bool)] = []
        for entry in offered where !active.contains(entry.id) {
            if let current = installed[entry.id] {
                if current.isOutdated(by: entry) { candidates.append((entry, false)) }
            } else if let event, entry.downloadPolicy.downloads(on: event), Self.serves(entry, language) {
                candidates.append((entry, entry.downloadPolicy.isEssential))
            }
        }
        let answers = try await askExtension(app, about: candidates.map(\.0), in: windows)
        var wanted: [Download] = []
        for (entry, essential) in candidates where answers[entry.id] ?? true {
            guard let current = installed[entry.id] else {
                wanted.append(download(entry, app: app, essential: essential))
                continue
            }
            if let downloads = update(entry, from: current, app: app) {
                wanted += downloads
            } else {
                // Nothing to fetch: the new version only drops files. Checking the kept ones reads them: long work.
                let packs = packStore(for: app)
                _ = try await blocking.run { try packs.installUpdate(entry: entry, changed: [:]) }
                observe(.packInstalled(appIdentifier: appIdentifier, id: entry.id, version: entry.version))
            }
        }
        let queued = try queue(wanted, for: app, foreground: false)
        if event != nil {
            launchGate.close(appIdentifier)
            try launchGate.announceIfReady(appIdentifier)
        }
        return Result(offered: offered.count, queued: queued)
    }

    /// Asks the app's extension, in one window, whether to download each pack (`shouldDownload(_:)`). A pack it
    /// did not answer for (no such entry point, or a window that ended first) downloads, as Apple's default does.
    private func askExtension(
        _ app: AppRecord, about entries: [DownloadManifest.Entry], in windows: WindowLauncher
    ) async throws -> [String: Bool] {
        guard !entries.isEmpty else { return [:] }
        let encoder = JSONEncoder()
        let events = entries.map { entry in
            WindowEvent.shouldDownload(AssetPackInfo(
                id: entry.id, version: entry.version, downloadSize: entry.downloadSize,
                userInfo: entry.userInfo.flatMap { try? Array(encoder.encode($0)) }, language: entry.language))
        }
        let outcome = try await windows.open(app, for: .assetPackQuestions(entries.count), events)
        for entry in entries where outcome.assetPackAnswers[entry.id] == false {
            observe(.packVetoed(appIdentifier: app.appIdentifier, id: entry.id))
        }
        return outcome.assetPackAnswers
    }

    /// Installs the app's finished pack downloads and reports the failed ones, each once. Runs off Swift's
    /// cooperative pool (unpacking blocks). An update made of single files waits until all its files are in.
    /// Returns the downloaded files, moved into the packs' staging area, for the caller to delete once it announced
    /// what waits on the packs (deleting a GiB takes a while; a kill before leaves them to the next start's cleanup).
    func installFinished(_ appIdentifier: String) throws -> [URL] {
        let rows = store
        guard let app = try rows.app(appIdentifier), app.hasManagedAssetPacks else { return [] }
        let packs = packStore(for: app)
        var discarded: [URL] = []
        let pending = try rows.pendingCompletions(for: appIdentifier, assetPacks: true)
        let catalogue = catalogue(for: app)
        let downloading = Set(try rows.activeDownloads(for: appIdentifier).filter { $0.download.kind == .assetPack }
            .map { "\($0.identifier) \(Self.version(of: $0))" })
        let groups = Dictionary(grouping: pending) { "\($0.identifier) \(Self.version(of: $0))" }
        for (key, group) in groups where !downloading.contains(key) {
            let id = group[0].identifier
            // The catalogue names the version the rows were queued for; it may have moved on since.
            let entry = catalogue?.assetPacks.first { $0.id == id && $0.version == Self.version(of: group[0]) }
            var failure = group.first { $0.state == .failed }?.error
            if failure == nil {
                failure = install(group, entry: entry, app: app)
            }
            if let failure {
                observe(.packFailed(appIdentifier: appIdentifier, id: id, error: failure))
            }
            for var row in group {
                if let path = row.filePath {
                    if let moved = packs.discard(path) { discarded.append(moved) } else { unlink(path) }
                }
                row.filePath = nil
                if let failure, row.state == .finished {
                    row.state = .failed
                    row.error = failure
                }
                row.delivered = true
                try rows.save(row)
            }
        }
        return discarded
    }

    /// Installs a finished archive, or the files of an update; nil when installed, else why not.
    private func install(_ rows: [QueuedDownload], entry: DownloadManifest.Entry?, app: AppRecord) -> HostError? {
        func failure(_ message: String) -> HostError { HostError.bahost(message) }
        // What was unpacked while the archive arrived is used below or goes now, whatever happens to the pack.
        let streamed = rows.count == 1 ? streamedUnpacks.take(rows[0].uniqueIdentifier) : nil
        guard let entry else {
            streamed?.abandon()
            return failure("the pack '\(rows[0].identifier)' changed on the server while it downloaded")
        }
        let packs = packStore(for: app)
        do {
            if rows.count == 1, rows[0].download.sha256 == entry.sha256, let archive = rows[0].filePath {
                if let staged = streamed?.staged() {
                    try packs.install(staged, entry: entry)
                } else {
                    try packs.install(archive: archive, entry: entry)
                }
            } else {
                // Each changed file by content, for every path that holds that content.
                let byContent = Dictionary(rows.compactMap { row in row.filePath.map { (row.download.sha256 ?? "", $0) } }) { first, _ in first }
                var changed: [String: String] = [:]
                for file in entry.files { if let path = byContent[file.sha256] { changed[file.path] = path } }
                do {
                    try packs.installUpdate(entry: entry, changed: changed)
                } catch {
                    // The installed files were not what the update expects (the app changed one): fetch the archive.
                    _ = try queue([download(entry, app: app, essential: false)], for: app, foreground: false)
                    return nil
                }
            }
            observe(.packInstalled(appIdentifier: app.appIdentifier, id: entry.id, version: entry.version))
            return nil
        } catch {
            return failure("\(error)")
        }
    }

    /// The catalogue's entry whose whole archive `row` downloads; nil for any other row (an update's single files
    /// are not archives).
    func wholeArchiveEntry(of row: QueuedDownload, app: AppRecord) -> DownloadManifest.Entry? {
        guard row.download.kind == .assetPack else { return nil }
        return catalogue(for: app)?.assetPacks.first {
            $0.id == row.identifier && $0.version == Self.version(of: row) && $0.sha256 == row.download.sha256
        }
    }

    /// Starts unpacking the archive of `entry` while `row` downloads it (its body has begun).
    func startStreamedUnpack(for row: QueuedDownload, entry: DownloadManifest.Entry, app: AppRecord) {
        let partial = dataRoot.partialPath(for: row.uniqueIdentifier)
        guard let unpack = try? StreamedUnpack(
            partialPath: partial, entry: entry, store: packStore(for: app), on: blocking) else { return }
        streamedUnpacks.start(row.uniqueIdentifier, unpack)
    }

    /// Removes what a killed host left in every managed app's pack staging folder.
    func removeLeftovers() {
        for app in (try? store.apps()) ?? [] where app.hasManagedAssetPacks {
            packStore(for: app).removeLeftovers()
        }
    }

    /// Queues pack downloads under the app's policy (allow list, allowance); reports what was refused. Returns how
    /// many were queued.
    func queue(_ downloads: [Download], for app: AppRecord, foreground: Bool) throws -> Int {
        var policy = app.policy
        var refused: [(Download, HostError)] = []
        let results = try store.enqueue(downloads, for: app.appIdentifier, foreground: foreground) { app, download in
            let error = policy.checkURL(download.url ?? "") ?? policy.allowance.admit(download)
            app.take(policy)
            return error
        }
        var queued = 0
        for (download, result) in results {
            switch result {
            case .success(let row):
                queued += 1
                observe(.queued(row.status))
            case .failure(let error):
                refused.append((download, error))
                observe(.rejected(download, error))
            }
        }
        try store.recordRefused(refused, for: app.appIdentifier)
        if queued > 0 { events.post(.queueChanged) }
        return queued
    }

    /// The language the app's localized packs follow (27): the one the app set, else the best of the user's
    /// preferred languages (as the app last reported them, else the service's environment's: the same user's) among
    /// those offered, else the manifest's primary language; nil when no pack is localized.
    func resolvedLanguage(_ app: AppRecord, _ manifest: DownloadManifest?) throws -> String? {
        let schedule = try store.schedule(app.appIdentifier)
        if let chosen = schedule?.assetPackLanguage { return chosen }
        guard let manifest, !manifest.availableLanguages.isEmpty else { return nil }
        let preferred = schedule?.preferredLanguages ?? LanguageTags.preferred()
        return LanguageTags.best(for: preferred, among: manifest.availableLanguages) ?? manifest.primaryLanguage
    }

    /// Whether a pack downloads on its own for an app in `language`: every language-neutral pack, and the
    /// localized ones of that language.
    static func serves(_ entry: DownloadManifest.Entry, _ language: String?) -> Bool {
        guard let tag = entry.language else { return true }
        return language.map { LanguageTags.serves(tag, $0) } ?? false
    }

    /// The packs of the app's catalogue offered to this platform.
    func offered(_ app: AppRecord) -> [DownloadManifest.Entry] {
        (catalogue(for: app)?.assetPacks ?? []).filter { $0.index.manifest.isForLinux }
    }

    // MARK: Steps

    /// The download of a pack's archive. Its unique identifier ends with the version (".vN"), which the events
    /// report; it is new at each attempt, so that it never collides with an earlier attempt's row.
    func download(_ entry: DownloadManifest.Entry, app: AppRecord, essential: Bool) -> Download {
        Download(
            kind: .assetPack, identifier: entry.id, uniqueIdentifier: Self.uniqueIdentifier(entry, app), url: entry.url,
            applicationGroupIdentifier: app.appGroupIdentifier, fileSize: entry.downloadSize, isEssential: essential,
            sha256: entry.sha256)
    }

    /// The downloads an update needs: the files that changed alone, when the server offers them and they are fewer
    /// bytes than the archive; else the archive. Nil when nothing needs downloading (only files went away).
    func update(_ entry: DownloadManifest.Entry, from installed: PackStore.Installed, app: AppRecord) -> [Download]? {
        guard let base = entry.fileBaseURL else { return [download(entry, app: app, essential: false)] }
        var byContent: [String: PackFile] = [:]
        for file in entry.changedFiles(since: installed.files) { byContent[file.sha256] = file }
        guard !byContent.isEmpty else { return nil }
        guard byContent.values.reduce(0, { $0 + $1.size }) < entry.downloadSize else {
            return [download(entry, app: app, essential: false)]
        }
        return byContent.values.sorted { $0.path < $1.path }.map { file in
            Download(
                kind: .assetPack, identifier: entry.id, uniqueIdentifier: Self.uniqueIdentifier(entry, app),
                url: base + file.sha256, applicationGroupIdentifier: app.appGroupIdentifier, fileSize: file.size,
                sha256: file.sha256)
        }
    }

    static func uniqueIdentifier(_ entry: DownloadManifest.Entry, _ app: AppRecord) -> String {
        "BAAssetPack.\(app.appGroupIdentifier).\(entry.id).\(UUID().uuidString).v\(entry.version)"
    }

    static func version(of row: QueuedDownload) -> Int { DownloadStatus.assetPackVersion(row.uniqueIdentifier) }

    /// The bytes bringing the pack to `entry`'s version costs: the changed files alone when the server offers them
    /// and they are fewer, else the archive.
    static func downloadSize(of entry: DownloadManifest.Entry, installed: PackStore.Installed?) -> Int64 {
        guard let installed, entry.fileBaseURL != nil else { return entry.downloadSize }
        var byContent: [String: Int64] = [:]
        for file in entry.changedFiles(since: installed.files) { byContent[file.sha256] = file.size }
        return min(entry.downloadSize, byContent.values.reduce(0, +))
    }

    private func save(_ manifest: DownloadManifest, for app: AppRecord) throws {
        let url = dataRoot.packCatalogue(for: app.appIdentifier)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try manifest.encoded().write(to: url, options: .atomic)
    }

    private func refuseManifest(_ app: AppRecord, _ error: HostError) throws {
        observe(.manifestFailed(error))
        let manifest = Download(
            kind: .manifest, identifier: "BAManifestURL", url: app.effectiveManifestURL,
            applicationGroupIdentifier: app.appGroupIdentifier, fileSize: 0)
        try store.recordRefused(manifest, for: app.appIdentifier, error: error)
    }
}
