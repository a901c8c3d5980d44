import Foundation
import Packs
import Queue
import Vocabulary

/// What the service asks of the engine for a managed app's asset packs: `AssetPackManager`'s calls and
/// `bahost debug packs`.
extension HostEngine {
    /// A content request for a managed app (`BAHasManagedAssetPacks`): fetches its download manifest and queues the
    /// packs the request downloads. Nil when the download manifest could not be fetched or read.
    public func packRequest(_ request: ContentRequest, appIdentifier: String) async throws -> (offered: Int, queued: Int)? {
        try await managedPacks.run(request, appIdentifier: appIdentifier, manifests: manifests, windows: windows)
            .map { ($0.offered, $0.queued) }
    }

    /// A managed app's packs: each in its catalogue with the version installed, if any (`bahost debug packs`).
    public func packs(_ appIdentifier: String) throws -> [PackListing] {
        guard let app = try store.app(appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
        let packs = managedPacks
        let installed = packs.packStore(for: app).installed()
        let downloading = Set(try store.activeDownloads(for: appIdentifier).filter { $0.download.kind == .assetPack }.map(\.identifier))
        let offered = packs.catalogue(for: app)?.assetPacks ?? []
        var listing = offered.map { entry in
            var listing = PackListing(
                id: entry.id, language: entry.language, policy: entry.downloadPolicy, availableVersion: entry.version,
                installed: installed[entry.id],
                downloadSize: ManagedPacks.downloadSize(of: entry, installed: installed[entry.id]),
                downloading: downloading.contains(entry.id))
            listing.updateAvailable = installed[entry.id]?.isOutdated(by: entry) ?? false
            return listing
        }
        // Installed packs the server no longer offers stay until removed.
        for (id, pack) in installed where !offered.contains(where: { $0.id == id }) {
            listing.append(PackListing(
                id: id, language: pack.language, policy: nil, availableVersion: nil, installed: pack, downloadSize: 0,
                downloading: false))
        }
        return listing.sorted { $0.id < $1.id }
    }

    /// The packs the app's download manifest offers to this platform; the manifest is fetched when the app has
    /// none yet (Apple: "may contact the server"). An installed pack's `downloadSize` is what its update costs:
    /// the changed files alone, when the server offers them.
    public func offeredPacks(_ appIdentifier: String) async throws -> [DownloadManifest.Entry] {
        let (packs, app) = try managed(appIdentifier)
        if packs.catalogue(for: app) == nil { _ = try await packRequest(.periodic, appIdentifier: appIdentifier) }
        let installed = packs.packStore(for: app).installed()
        return packs.offered(app).map { entry in
            var entry = entry
            entry.downloadSize = ManagedPacks.downloadSize(of: entry, installed: installed[entry.id])
            return entry
        }
    }

    /// Apple's `AssetPack.Status` of a pack, as a raw value: available to download (1), an update available (2),
    /// up to date (4), out of date (8), obsolete (16), downloading (32), downloaded (64).
    public func packStatus(_ appIdentifier: String, id: String) async throws -> Int {
        let offered = try await offeredPacks(appIdentifier).first { $0.id == id }
        let (packs, app) = try managed(appIdentifier)
        let installed = packs.packStore(for: app).installed(id)
        var status = 0
        if offered != nil { status |= 1 }
        if let installed {
            status |= 64
            if let offered {
                status |= installed.isOutdated(by: offered) ? 2 | 8 : 4
            } else {
                status |= 16
            }
        }
        if try isDownloading(appIdentifier, id) { status |= 32 }
        return status
    }

    /// `ensureLocalAvailability`: downloads and installs the pack unless it is installed (at the latest version,
    /// when `requireLatest`), and returns once it is; throws why it is not.
    public func ensurePack(_ appIdentifier: String, id: String, requireLatest: Bool) async throws {
        let (packs, app) = try managed(appIdentifier)
        // Waiting for an available update means asking the server for the latest manifest first.
        if requireLatest || packs.catalogue(for: app) == nil {
            _ = try await packRequest(.periodic, appIdentifier: appIdentifier)
        }
        let installed = packs.packStore(for: app).installed(id)
        guard let entry = packs.offered(app).first(where: { $0.id == id }) else {
            guard installed != nil else { throw Self.packNotFound(id) }
            return
        }
        if let installed, !installed.isOutdated(by: entry) || !requireLatest { return }
        if try !isDownloading(appIdentifier, id) {
            if let installed {
                if let downloads = packs.update(entry, from: installed, app: app) {
                    _ = try packs.queue(downloads, for: app, foreground: true)
                } else {
                    let store = packs.packStore(for: app)
                    _ = try await blocking.run { try store.installUpdate(entry: entry, changed: [:]) }
                    return
                }
            } else {
                _ = try packs.queue([packs.download(entry, app: app, essential: false)], for: app, foreground: true)
            }
        }
        try await events.waitForTransfers {
            try isDownloading(appIdentifier, id)
                || store.pendingCompletions(for: appIdentifier, assetPacks: true).contains(where: { $0.identifier == id })
        }
        guard let now = packs.packStore(for: app).installed(id), !now.isOutdated(by: entry) else {
            let failed = try store.downloads(for: appIdentifier).last { $0.identifier == id && $0.state == .failed }
            throw failed?.error ?? HostError(
                code: ManagedErrorCode.localAvailabilityFailure, domain: ManagedErrorCode.domain,
                message: "the asset pack '\(id)' could not be made available")
        }
    }

    /// `progress.cancel()`: stops the pack's download (every file of an update); what was installed before stays.
    public func cancelPackDownload(_ appIdentifier: String, id: String) throws {
        let rows = try store.activeDownloads(for: appIdentifier).filter { $0.identifier == id && $0.download.kind == .assetPack }
        var cancelledAny = false
        for row in rows {
            guard let cancelled = try store.cancel(
                appIdentifier: appIdentifier, uniqueIdentifier: row.uniqueIdentifier, identifier: id)
            else { continue }
            driver.stopTransfer(cancelled.uniqueIdentifier)
            cancelledAny = true
        }
        if cancelledAny {
            observe(.packFailed(
                appIdentifier: appIdentifier, id: id,
                error: HostError(code: -999, domain: "NSURLErrorDomain", message: "the download was cancelled")))
        }
    }

    /// `checkForUpdates()`: fetches the latest download manifest, queues the newer version of each installed pack,
    /// and removes the installed packs the server no longer offers.
    public func checkForPackUpdates(_ appIdentifier: String) async throws -> (updating: [String], removed: [String]) {
        guard try await packRequest(.periodic, appIdentifier: appIdentifier) != nil else {
            throw HostError(
                code: ManagedErrorCode.localAvailabilityFailure, domain: ManagedErrorCode.domain,
                message: "the download manifest could not be fetched")
        }
        let (packs, app) = try managed(appIdentifier)
        let offered = Dictionary(packs.offered(app).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var updating: [String] = []
        var removed: [String] = []
        for (id, pack) in packs.packStore(for: app).installed() {
            if let entry = offered[id] {
                if pack.isOutdated(by: entry) { updating.append(id) }
            } else {
                try removePack(appIdentifier, id: id)
                removed.append(id)
            }
        }
        return (updating.sorted(), removed.sorted())
    }

    // MARK: Languages (27)

    /// The download manifest's primary language, and the language the app's localized packs follow.
    public func packLanguages(_ appIdentifier: String) throws -> (primary: String?, resolved: String?) {
        let (packs, app) = try managed(appIdentifier)
        let catalogue = packs.catalogue(for: app)
        return (catalogue?.primaryLanguage, try packs.resolvedLanguage(app, catalogue))
    }

    /// `resolvedLanguageID = language`: the app's localized packs follow `language` from now on (nil: the user's
    /// preferred languages again). Nothing is downloaded or removed until `reconcilePreferredLanguages()`.
    public func setPackLanguage(_ appIdentifier: String, _ language: String?) throws {
        _ = try managed(appIdentifier)
        if let language {
            do {
                try PackManifest.validate(language: language)
            } catch {
                throw HostError.bahost("\(error)")
            }
        }
        try store.updateSchedule(appIdentifier) { $0.assetPackLanguage = language }
    }

    /// `reconcilePreferredLanguages()`: records `preferred` (the app's own preferred languages) as the user's,
    /// resolves the language again (the one the app set, else the best of those), makes that language's essential
    /// and prefetch packs available, then removes the installed localized packs of every other language. Returns
    /// what it downloaded and what it removed.
    public func reconcilePackLanguages(_ appIdentifier: String, preferred: [String]) async throws
        -> (updating: [String], removed: [String])
    {
        let (packs, app) = try managed(appIdentifier)
        let reported = Array(preferred.filter { (try? PackManifest.validate(language: $0)) != nil }.prefix(32))
        try store.updateSchedule(appIdentifier) { $0.preferredLanguages = reported }
        if packs.catalogue(for: app) == nil { _ = try await packRequest(.periodic, appIdentifier: appIdentifier) }
        let language = try packs.resolvedLanguage(app, packs.catalogue(for: app))
        let installed = packs.packStore(for: app).installed()
        var updating: [String] = []
        for entry in packs.offered(app) where entry.language != nil && installed[entry.id] == nil
            && ManagedPacks.serves(entry, language)
            && (entry.downloadPolicy.downloads(on: .firstInstallation) || entry.downloadPolicy.downloads(on: .subsequentUpdate))
        {
            try await ensurePack(appIdentifier, id: entry.id, requireLatest: false)
            updating.append(entry.id)
        }
        var removed: [String] = []
        for (id, pack) in installed {
            guard let tag = pack.language, !(language.map { LanguageTags.serves(tag, $0) } ?? false) else { continue }
            try removePack(appIdentifier, id: id)
            removed.append(id)
        }
        return (updating.sorted(), removed.sorted())
    }

    /// `remove(assetPackWithID:)`: the pack leaves the namespace (in one rename) and its download stops.
    public func removePack(_ appIdentifier: String, id: String) throws {
        let (packs, app) = try managed(appIdentifier)
        let installed = packs.packStore(for: app).installed(id) != nil
        let downloading = try isDownloading(appIdentifier, id)
        guard installed || downloading || packs.offered(app).contains(where: { $0.id == id }) else {
            throw Self.packNotFound(id)
        }
        if downloading { try cancelPackDownload(appIdentifier, id: id) }
        do {
            try packs.packStore(for: app).remove(id)
        } catch {
            throw HostError.bahost("\(error)")
        }
    }

    // MARK: Helpers

    private func managed(_ appIdentifier: String) throws -> (ManagedPacks, AppRecord) {
        guard let app = try store.app(appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
        guard app.hasManagedAssetPacks else {
            throw HostError(
                code: ManagedErrorCode.assetPackNotFound, domain: ManagedErrorCode.domain,
                message: "\(appIdentifier) does not manage asset packs: set BAHasManagedAssetPacks in its Info.plist")
        }
        return (managedPacks, app)
    }

    private func isDownloading(_ appIdentifier: String, _ id: String) throws -> Bool {
        try store.activeDownloads(for: appIdentifier).contains { $0.identifier == id && $0.download.kind == .assetPack }
    }

    static func packNotFound(_ id: String) -> HostError {
        HostError(
            code: ManagedErrorCode.assetPackNotFound, domain: ManagedErrorCode.domain,
            message: "no asset pack '\(id)' is offered to this app")
    }
}

/// One pack of a managed app, as `bahost debug packs` shows it.
public struct PackListing: Sendable {
    public var id: String
    /// (27) A localized pack's language.
    public var language: String?
    /// Nil for an installed pack the server no longer offers.
    public var policy: DownloadPolicy?
    public var availableVersion: Int?
    public var installed: PackStore.Installed?
    public var downloadSize: Int64
    public var downloading: Bool
    /// The server offers other files than the installed ones.
    public var updateAvailable = false
}
