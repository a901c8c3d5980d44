// Over 400 lines: Apple's AssetPackManager is one type; the fan-out of its status updates is the rest.
import AppClient
import Foundation
import ServiceWire
import Synchronization
import SystemPackage
import Vocabulary

/// Manages the app's asset packs (Apple's `AssetPackManager`): which the server offers, their status, making them
/// available locally, updates, removal, and reading their files from the one namespace they share.
///
/// The bahost service downloads and installs the packs (the app's Info.plist sets `BAHasManagedAssetPacks`); this
/// manager asks it over the same socket as `BADownloadManager`, and reads the installed files directly from the app
/// group's container. Calls that wait for a download or a server run on a thread of their own, not on Swift's
/// cooperative pool.
public actor AssetPackManager {
    /// The app's manager.
    public static let shared = AssetPackManager()

    /// Every pack's status updates, as they happen. The sequence never finishes. Isolated to the actor, as Apple
    /// declares it: another module reads it with `await`.
    public let statusUpdates: StatusUpdates

    nonisolated let transport: ServiceTransport
    private nonisolated let updates: UpdateHub

    init(
        socketPath: String = ServiceProtocol.appSocketPath,
        appIdentifier: String? = ServiceProtocol.defaultAppIdentifier
            ?? Bundle.main.bundleIdentifier
    ) {
        let hub = UpdateHub()
        updates = hub
        let transport = ServiceTransport(
            socketPath: socketPath, appIdentifier: appIdentifier,
            assetPackEvents: { pack, update in hub.publish(pack, update) })
        self.transport = transport
        statusUpdates = StatusUpdates(hub: hub, id: nil, transport: transport)
        hub.cancel = { id in
            Thread.detachNewThread { _ = try? transport.request(.cancelAssetPackDownload(id)) }
        }
    }

    /// One pack's status updates; the sequence finishes after `.finished` or `.failed`.
    public nonisolated func statusUpdates(forAssetPackWithID id: String) -> StatusUpdates {
        StatusUpdates(hub: updates, id: id, transport: transport)
    }

    // MARK: The packs

    /// Every pack the server offers to the app.
    @available(*, deprecated, message: "Use manifest")
    public var allAssetPacks: Set<AssetPack> {
        get async throws { try await manifest.assetPacks }
    }

    /// The app's download manifest: every pack the server offers to it.
    public var manifest: AssetPackManifest {
        get async throws {
            guard case .assetPacks(let packs) = try await call(.assetPacks),
                case .assetPackLanguages(let primary, let resolved) = try await call(.assetPackLanguages)
            else {
                throw ServiceTransport.invalid("the service answered with something else")
            }
            let set = Set(packs.map {
                AssetPack(
                    id: $0.id, version: $0.version, downloadSize: Int($0.downloadSize), userInfo: $0.userInfo.map { Data($0) },
                    language: $0.language)
            })
            updates.remember(set)
            return AssetPackManifest(assetPacks: set, primaryLanguage: primary, resolvedLanguage: resolved)
        }
    }

    /// The pack with this ID; throws `ManagedBackgroundAssetsError.assetPackNotFound` when the server offers none.
    public func assetPack(withID id: String) async throws -> AssetPack {
        guard let pack = try await manifest.assetPack(withID: id) else {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: id)
        }
        return pack
    }

    // MARK: Status

    /// The pack's status relative to the server.
    @available(*, deprecated, renamed: "status(relativeTo:)")
    public func status(ofAssetPackWithID id: String) async throws -> AssetPack.Status {
        guard case .assetPackStatus(let raw) = try await call(.assetPackStatus(id), pack: id) else {
            throw ServiceTransport.invalid("the service answered with something else")
        }
        return AssetPack.Status(rawValue: raw)
    }

    /// The pack's status relative to the server. It doesn't trigger any download, update or removal.
    public func status(relativeTo assetPack: AssetPack) async throws -> AssetPack.Status {
        guard case .assetPackStatus(let raw) = try await call(.assetPackStatus(assetPack.id), pack: assetPack.id) else {
            throw ServiceTransport.invalid("the service answered with something else")
        }
        return AssetPack.Status(rawValue: raw)
    }

    /// The pack's status from what is on the device alone; empty for a pack that is not there.
    public func localStatus(ofAssetPackWithID id: String) async -> AssetPack.Status {
        assetPackIsAvailableLocally(withID: id) ? .downloaded : []
    }

    /// Whether a version of the pack is on the device.
    public nonisolated func assetPackIsAvailableLocally(withID id: String) -> Bool {
        (try? AssetPackFiles(transport.client))?.isInstalled(id) ?? false
    }

    // MARK: Availability, updates, removal

    /// Downloads the pack if it is not on the device, and returns once it is.
    @available(*, deprecated, message: "Use ensureLocalAvailability(of:requireLatestVersion:)")
    public func ensureLocalAvailability(of assetPack: AssetPack) async throws {
        try await ensureLocalAvailability(of: assetPack, requireLatestVersion: false)
    }

    /// Downloads the pack if it is not on the device (or, with `requireLatestVersion`, if a newer version is
    /// available), and returns once it is available locally.
    public func ensureLocalAvailability(of assetPack: AssetPack, requireLatestVersion: Bool = false) async throws {
        _ = try await call(.ensureAssetPack(assetPack.id, requireLatestVersion: requireLatestVersion), pack: assetPack.id)
    }

    /// Makes each pack available locally; throws a `LocalAvailabilityError` that names the successes and the
    /// failures when any fails.
    public func ensureLocalAvailability(of assetPacks: Set<AssetPack>, requireLatestVersions: Bool = false) async throws {
        var successes = Set<AssetPack>()
        var failures: [AssetPack: any Error] = [:]
        for pack in assetPacks {
            do {
                try await ensureLocalAvailability(of: pack, requireLatestVersion: requireLatestVersions)
                successes.insert(pack)
            } catch {
                failures[pack] = error
            }
        }
        if !failures.isEmpty { throw LocalAvailabilityError(successes: successes, failures: failures) }
    }

    /// Gets the latest asset-pack information from the server, updates outdated packs, and removes obsolete ones.
    @discardableResult
    public func checkForUpdates() async throws -> (updatingIDs: Set<String>, removedIDs: Set<String>) {
        guard case .assetPackUpdates(let updating, let removed) = try await call(.checkForAssetPackUpdates) else {
            throw ServiceTransport.invalid("the service answered with something else")
        }
        return (Set(updating), Set(removed))
    }

    /// Removes the pack from the device.
    public func remove(assetPackWithID id: String) async throws {
        _ = try await call(.removeAssetPack(id), pack: id)
    }

    // MARK: Languages (27)

    /// The language the app's localized packs follow: the one set here, else the best of the user's preferred
    /// languages among those the packs offer, else the manifest's primary language. Setting it (nil: back to the
    /// user's languages) downloads and removes nothing by itself: `reconcilePreferredLanguages()` does. The service
    /// keeps it as a BCP-47 tag, the language's minimal one (`fr-CA`, `en` for `en-US`), as packs name theirs.
    public nonisolated var resolvedLanguage: Locale.Language? {
        get { resolvedLanguageTag.map { Locale.Language(identifier: $0) } }
        set { resolvedLanguageTag = newValue?.minimalIdentifier }
    }

    /// `resolvedLanguage` as its BCP-47 tag, as bahost 0.3.0 named it.
    @available(*, deprecated, renamed: "resolvedLanguage")
    public nonisolated var resolvedLanguageID: String? {
        get { resolvedLanguageTag }
        set { resolvedLanguageTag = newValue }
    }

    private nonisolated var resolvedLanguageTag: String? {
        get {
            guard case .assetPackLanguages(_, let resolved)? = try? transport.request(.assetPackLanguages) else { return nil }
            return resolved
        }
        set {
            _ = try? transport.request(.setAssetPackLanguage(newValue))
        }
    }

    /// The languages of the localized packs on the device, each once, in the order of their BCP-47 tags (`de`, `en`,
    /// `fr-CA`): the same order every time.
    public var locallyAvailableLanguages: [Locale.Language] {
        get async {
            guard let files = try? AssetPackFiles(transport.client) else { return [] }
            return Locale.Language.inTagOrder(Set(files.installedLanguages().values))
        }
    }

    /// Brings the localized packs on the device in line with the resolved language (the one the app set, else the
    /// best of this process's preferred languages): that language's essential and prefetch packs are made
    /// available, then the localized packs of every other language removed.
    public func reconcilePreferredLanguages() async throws {
        _ = try await call(.reconcileAssetPackLanguages(preferred: LanguageTags.preferred()))
    }

    /// The contents of the file at `path` in the packs localized for `language` (its own tag first, then its
    /// language: `fr` serves `fr-CA`).
    public nonisolated func contents(
        at path: FilePath, asLocalizedFor language: Locale.Language, options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        try Data(contentsOf: locate(path, localizedFor: language), options: options)
    }

    /// An open, read-only descriptor of the file at `path` in the packs localized for `language`; the caller closes it.
    public nonisolated func descriptor(for path: FilePath, asLocalizedFor language: Locale.Language) throws -> FileDescriptor {
        try FileDescriptor.open(FilePath(locate(path, localizedFor: language).path), .readOnly, options: [.closeOnExec])
    }

    /// The URL of the file at `path` in the packs localized for `language`; well formed even when nothing is there.
    public nonisolated func url(for path: FilePath, asLocalizedFor language: Locale.Language) throws -> URL {
        do {
            return try locate(path, localizedFor: language)
        } catch ManagedBackgroundAssetsError.fileNotFound {
            return URL(fileURLWithPath: try files().root).appendingPathComponent(path.string)
        }
    }

    // MARK: Files

    /// The contents of the file at `path` in the packs' shared namespace (or in one pack only).
    public nonisolated func contents(
        at path: FilePath, searchingInAssetPackWithID id: String? = nil, options: Data.ReadingOptions = .mappedIfSafe
    ) throws -> Data {
        try Data(contentsOf: locate(path, in: id), options: options)
    }

    /// An open, read-only descriptor of the file at `path`; the caller closes it.
    public nonisolated func descriptor(for path: FilePath, searchingInAssetPackWithID id: String? = nil) throws
        -> FileDescriptor
    {
        try FileDescriptor.open(FilePath(locate(path, in: id).path), .readOnly, options: [.closeOnExec])
    }

    /// The URL of the item at `path` in the namespace. A folder that several packs hold comes back merged: a
    /// folder of this process's own with links to every pack's entries (the first pack by ID wins a name they
    /// share). It is well formed even when nothing is there, and must not be kept beyond the process: an update
    /// moves the files.
    public nonisolated func url(for path: FilePath) throws -> URL {
        let files = try files()
        return URL(fileURLWithPath: try Self.bridged(path: path) { () throws(HostError) in try files.view(of: path.string) })
    }

    // MARK: Plumbing

    /// The installed packs' files (`AssetPackFiles`, shared with the C library), in the container the service names.
    private nonisolated func files() throws -> AssetPackFiles {
        let client = transport.client
        return try Self.bridged { () throws(HostError) in try AssetPackFiles(client) }
    }

    /// The file at `path` in the installed packs localized for `language`.
    private nonisolated func locate(_ path: FilePath, localizedFor language: Locale.Language) throws -> URL {
        let files = try files()
        // The minimal tag (`en` for `en-US`, `fr-CA` for itself): what a pack's language is written as.
        let tag = language.minimalIdentifier
        return URL(fileURLWithPath: try Self.bridged(path: path) { () throws(HostError) in
            try files.locate(path.string, localizedFor: tag)
        })
    }

    /// The file at `path` in the one pack `id`, or in the first installed pack (by ID) that has it.
    private nonisolated func locate(_ path: FilePath, in id: String?) throws -> URL {
        let files = try files()
        return URL(fileURLWithPath: try Self.bridged(path: path, pack: id) { () throws(HostError) in
            try files.locate(path.string, in: id)
        })
    }

    /// Runs `body`, a managed error thrown as Apple's `ManagedBackgroundAssetsError` (naming `path` or `pack`), any
    /// other as an `NSError`.
    private static func bridged<T>(path: FilePath? = nil, pack: String? = nil, _ body: () throws(HostError) -> T) throws
        -> T
    {
        do {
            return try body()
        } catch where error.domain == ManagedErrorCode.domain && error.code == ManagedErrorCode.fileNotFound {
            throw ManagedBackgroundAssetsError.fileNotFound(at: path ?? FilePath())
        } catch where error.domain == ManagedErrorCode.domain && error.code == ManagedErrorCode.assetPackNotFound {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: pack ?? "")
        } catch {
            throw NSError(wire: error)
        }
    }

    /// Sends a request on a thread of its own (the call may wait minutes for a download); Apple's managed errors
    /// come back as `ManagedBackgroundAssetsError` where they name `pack`.
    private nonisolated func call(_ request: ServiceRequest, pack: String? = nil) async throws -> ServiceReply {
        let transport = self.transport
        let result: Result<ServiceReply, any Error> = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Result { try transport.request(request) }) }
        }
        do {
            return try result.get()
        } catch let error as NSError
            where error.domain == ManagedErrorCode.domain && error.code == Int(ManagedErrorCode.assetPackNotFound)
        {
            throw ManagedBackgroundAssetsError.assetPackNotFound(withID: pack ?? "")
        }
    }
}

extension AssetPackManager {
    /// A change in a pack's download (Apple's `AssetPackManager.DownloadStatusUpdate`).
    ///
    /// `@unchecked Sendable` because Foundation's `Progress` on Linux is a class without the annotation; the
    /// manager never changes a `Progress` after it has yielded it, except through its own thread-safe counters.
    public enum DownloadStatusUpdate: @unchecked Sendable {
        /// The download began, or resumed after a pause.
        case began(AssetPack)
        /// The download paused; it resumes with `began`.
        case paused(AssetPack)
        /// `progress.cancel()` stops the download.
        case downloading(AssetPack, Progress)
        /// The pack is installed: its files are available locally only from now on.
        case finished(AssetPack)
        /// The download failed with this error; the pack's previous version, if any, stays installed.
        case failed(AssetPack, any Error)

        var assetPack: AssetPack {
            switch self {
            case .began(let pack), .paused(let pack), .downloading(let pack, _), .finished(let pack), .failed(let pack, _):
                pack
            }
        }

        var isLast: Bool {
            switch self {
            case .finished, .failed: true
            default: false
            }
        }
    }

    /// Status updates from the moment iteration starts. Each iterator gets every update.
    public struct StatusUpdates: AsyncSequence, Sendable {
        public typealias Element = DownloadStatusUpdate
        fileprivate let hub: UpdateHub
        fileprivate let id: String?
        fileprivate let transport: ServiceTransport

        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: AsyncStream<DownloadStatusUpdate>.AsyncIterator
            public mutating func next() async -> DownloadStatusUpdate? { await base.next() }
        }

        public func makeAsyncIterator() -> AsyncIterator {
            // Updates arrive on the service's connection: open it if nothing else has.
            transport.connectInBackground()
            return AsyncIterator(base: hub.subscribe(id: id).makeAsyncIterator())
        }
    }

    /// Fans the service's pack events out to every iterator, as Apple's values.
    fileprivate final class UpdateHub: @unchecked Sendable {  // safe: `cancel` is set before any event; the rest locks
        private struct State {
            var subscribers: [UUID: (id: String?, continuation: AsyncStream<DownloadStatusUpdate>.Continuation)] = [:]
            /// The packs last listed, to hand back whole in updates (events carry only the pack's ID and version).
            var known: [String: AssetPack] = [:]
            /// Each downloading pack's progress, one object per download, which `cancel()` stops.
            var progress: [String: Progress] = [:]
        }

        private let state = Mutex(State())
        /// Stops a pack's download (set once, before any event).
        var cancel: @Sendable (String) -> Void = { _ in }

        func remember(_ packs: Set<AssetPack>) {
            state.withLock { state in for pack in packs { state.known[pack.id] = pack } }
        }

        func subscribe(id: String?) -> AsyncStream<DownloadStatusUpdate> {
            let (stream, continuation) = AsyncStream.makeStream(of: DownloadStatusUpdate.self)
            let key = UUID()
            state.withLock { $0.subscribers[key] = (id, continuation) }
            continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.subscribers.removeValue(forKey: key) } }
            return stream
        }

        func publish(_ wire: AssetPackInfo, _ update: WirePackUpdate) {
            let (event, targets) = state.withLock { state -> (DownloadStatusUpdate, [(UUID, AsyncStream<DownloadStatusUpdate>.Continuation)]) in
                var pack = state.known[wire.id]
                if pack == nil || (wire.version != 0 && pack?.version != wire.version) {
                    pack = AssetPack(id: wire.id, version: wire.version, downloadSize: Int(wire.downloadSize), userInfo: nil)
                }
                let event: DownloadStatusUpdate
                switch update {
                case .began:
                    state.progress[wire.id] = nil
                    event = .began(pack!)
                case .paused:
                    event = .paused(pack!)
                case .downloading(let completed, let total):
                    let progress = state.progress[wire.id] ?? {
                        let progress = Progress(totalUnitCount: total)
                        let cancel = self.cancel
                        progress.cancellationHandler = { cancel(wire.id) }
                        state.progress[wire.id] = progress
                        return progress
                    }()
                    progress.totalUnitCount = total
                    progress.completedUnitCount = completed
                    event = .downloading(pack!, progress)
                case .finished:
                    state.progress[wire.id] = nil
                    event = .finished(pack!)
                case .failed(let error):
                    state.progress[wire.id] = nil
                    event = .failed(pack!, NSError(wire: error))
                }
                let targets = state.subscribers.filter { $0.value.id == nil || $0.value.id == wire.id }
                    .map { ($0.key, $0.value.continuation) }
                return (event, targets)
            }
            for (key, continuation) in targets {
                continuation.yield(event)
                // A single pack's sequence finishes after its last update.
                if event.isLast, state.withLock({ $0.subscribers[key]?.id != nil }) { continuation.finish() }
            }
        }
    }
}
