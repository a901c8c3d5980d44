import ExtensionRuntime
import Foundation
import Packs
import Queue
import Vocabulary

/// A managed app's asset packs (`BAHasManagedAssetPacks`): the host, not the extension, decides what to download.
///
/// A content request fetches the app's download manifest (`BAManifestURL`) under the same policy as an unmanaged
/// manifest, keeps it as the app's catalogue, and queues each pack's archive as a download of its own:
/// - on install (`firstInstallation`) and update (`subsequentUpdate`), the essential and prefetch packs that name the
///   event; essential ones are essential downloads, which the app's launch waits for;
/// - on any request, a newer version of every installed pack;
/// - on-demand packs only when the app asks.
///
/// A finished archive is then checked against the catalogue and installed whole (`PackStore`) before its
/// completion counts as delivered, so that an essential pack is on disk before the app may launch.
struct ManagedPacks {
    let context: EngineContext

    /// What a managed content request did.
    struct Result: Sendable {
        /// The download manifest's packs offered to this platform.
        var offered: Int
        /// Pack downloads queued by this request.
        var queued: Int
    }

    /// The app's catalogue: the download manifest last fetched, or nil before the first.
    func catalogue(for app: AppRecord) -> DownloadManifest? {
        FileManager.default.contents(atPath: context.dataRoot.packCatalogue(for: app.appIdentifier).path)
            .flatMap { try? DownloadManifest(data: $0) }
    }

    func store(for app: AppRecord) -> PackStore {
        PackStore(root: context.dataRoot.assetPacks(for: app.appGroupIdentifier))
    }

    /// Fetches the download manifest and queues the packs the request downloads. Nil when the manifest could not be
    /// fetched or read (the failure is recorded as the manifest's, as for an unmanaged app).
    func run(_ request: ContentRequest, appIdentifier: String) async throws -> Result? {
        let rows = context.store
        guard let app = try rows.app(appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
        try context.dataRoot.prepare(appGroupIdentifier: app.appGroupIdentifier)
        let manifest: DownloadManifest
        switch await ManifestFetch(context: context).fetch(for: app) {
        case .success(let path):
            defer { unlink(path) }
            do {
                manifest = try DownloadManifest(data: Data(contentsOf: URL(fileURLWithPath: path)))
                try save(manifest, for: app)
            } catch {
                try refuseManifest(app, HostError(code: -1, domain: "BAHostErrorDomain", message: "\(error)"))
                return nil
            }
        case .failure(let error):
            try refuseManifest(app, error)
            return nil
        }
        let installed = store(for: app).installed()
        let event: DownloadPolicy.InstallationEvent? =
            switch request {
            case .install: .firstInstallation
            case .update: .subsequentUpdate
            default: nil
            }
        let active = Set(try rows.activeDownloads(for: appIdentifier).map(\.identifier))
        let offered = manifest.assetPacks.filter { $0.index.manifest.isForLinux }
        var candidates: [(DownloadManifest.Entry, essential: Bool)] = []
        for entry in offered where !active.contains(entry.id) {
            if let current = installed[entry.id] {
                if current.version < entry.version { candidates.append((entry, false)) }
            } else if let event, entry.downloadPolicy.downloads(on: event) {
                candidates.append((entry, entry.downloadPolicy.isEssential))
            }
        }
        let answers = try await askExtension(app, about: candidates.map(\.0))
        let wanted = candidates.filter { answers[$0.0.id] ?? true }.map { download($0.0, app: app, essential: $0.essential) }
        let queued = try queue(wanted, for: app, foreground: false)
        if event != nil {
            context.launchGate.close(appIdentifier)
            try context.announceLaunchIfReady(appIdentifier)
        }
        return Result(offered: offered.count, queued: queued)
    }

    /// Asks the app's extension, in one window, whether to download each pack (`shouldDownload(_:)`). A pack it
    /// did not answer for (no such entry point, or a window that ended first) downloads, as Apple's default does.
    private func askExtension(_ app: AppRecord, about entries: [DownloadManifest.Entry]) async throws -> [String: Bool] {
        guard !entries.isEmpty else { return [:] }
        let encoder = JSONEncoder()
        let events = entries.map { entry in
            WindowEvent.shouldDownload(AssetPackInfo(
                id: entry.id, version: entry.version, downloadSize: entry.downloadSize,
                userInfo: entry.userInfo.flatMap { try? encoder.encode($0) }))
        }
        let (limits, appGroup) = (context.settings.limits, context.dataRoot.appGroup(of: app))
        let services = AppDownloads(context: context, appIdentifier: app.appIdentifier)
        let outcome = try await onWindowThread {
            try ExtensionWindow(pluginPath: app.pluginPath, limits: limits, appGroup: appGroup).run(events, services: services)
        }
        context.observe(.window(.assetPackQuestions(entries.count), outcome, appIdentifier: app.appIdentifier))
        for entry in entries where outcome.assetPackAnswers[entry.id] == false {
            context.observe(.packVetoed(appIdentifier: app.appIdentifier, id: entry.id))
        }
        return outcome.assetPackAnswers
    }

    /// Installs the app's finished pack downloads and reports the failed ones, each once. Runs off Swift's
    /// cooperative pool (unpacking blocks).
    func installFinished(_ appIdentifier: String) throws {
        let rows = context.store
        guard let app = try rows.app(appIdentifier), app.hasManagedAssetPacks else { return }
        let packs = store(for: app)
        let catalogue = catalogue(for: app)
        for var row in try rows.pendingCompletions(for: appIdentifier, assetPacks: true) {
            if row.state == .finished, let archive = row.filePath {
                // The archive's hash names the version it was queued for; the catalogue may have moved on since.
                if let entry = catalogue?.assetPacks.first(where: { $0.id == row.identifier && $0.sha256 == row.download.sha256 }) {
                    do {
                        try packs.install(archive: archive, entry: entry)
                        context.observe(.packInstalled(appIdentifier: appIdentifier, id: entry.id, version: entry.version))
                    } catch {
                        row.state = .failed
                        row.error = HostError(code: -1, domain: "BAHostErrorDomain", message: "\(error)")
                    }
                } else {
                    row.state = .failed
                    row.error = HostError(
                        code: -1, domain: "BAHostErrorDomain",
                        message: "the pack '\(row.identifier)' changed on the server while it downloaded")
                }
                unlink(archive)
                row.filePath = nil
            }
            if row.state == .failed, let error = row.error {
                context.observe(.packFailed(appIdentifier: appIdentifier, id: row.identifier, error: error))
            }
            row.delivered = true
            try rows.save(row)
        }
    }

    /// Removes what a killed host left in every managed app's pack staging folder.
    func removeLeftovers() {
        for app in (try? context.store.apps()) ?? [] where app.hasManagedAssetPacks {
            store(for: app).removeLeftovers()
        }
    }

    /// Queues pack downloads under the app's policy (allow list, allowance); reports what was refused. Returns how
    /// many were queued.
    func queue(_ downloads: [Download], for app: AppRecord, foreground: Bool) throws -> Int {
        var policy = app.policy
        var refused: [(Download, HostError)] = []
        let results = try context.store.enqueue(downloads, for: app.appIdentifier, foreground: foreground) { app, download in
            let error = policy.checkURL(download.url ?? "") ?? policy.allowance.admit(download)
            app.take(policy)
            return error
        }
        var queued = 0
        for (download, result) in results {
            switch result {
            case .success(let row):
                queued += 1
                context.observe(.queued(row))
            case .failure(let error):
                refused.append((download, error))
                context.observe(.rejected(download, error))
            }
        }
        try context.store.recordRefused(refused, for: app.appIdentifier)
        if queued > 0 { context.signal.fire() }
        return queued
    }

    /// The packs of the app's catalogue offered to this platform.
    func offered(_ app: AppRecord) -> [DownloadManifest.Entry] {
        (catalogue(for: app)?.assetPacks ?? []).filter { $0.index.manifest.isForLinux }
    }

    // MARK: Steps

    func download(_ entry: DownloadManifest.Entry, app: AppRecord, essential: Bool) -> Download {
        Download(
            kind: .assetPack, identifier: entry.id,
            uniqueIdentifier: "BAAssetPack.\(app.appGroupIdentifier).\(entry.id).v\(entry.version)", url: entry.url,
            applicationGroupIdentifier: app.appGroupIdentifier, fileSize: entry.downloadSize, isEssential: essential,
            sha256: entry.sha256)
    }

    private func save(_ manifest: DownloadManifest, for app: AppRecord) throws {
        let url = context.dataRoot.packCatalogue(for: app.appIdentifier)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try manifest.encoded().write(to: url, options: .atomic)
    }

    private func refuseManifest(_ app: AppRecord, _ error: HostError) throws {
        context.observe(.manifestFailed(error))
        let manifest = Download(
            kind: .manifest, identifier: "BAManifestURL", url: app.effectiveManifestURL,
            applicationGroupIdentifier: app.appGroupIdentifier, fileSize: 0)
        try context.store.recordRefused(manifest, for: app.appIdentifier, error: error)
    }
}
