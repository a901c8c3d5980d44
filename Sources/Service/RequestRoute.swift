import ServiceWire

/// Who may make each request and where the service answers it: one row per request, so that a new request is
/// classified here once (the switch is exhaustive) instead of in parallel lists.
enum RequestRoute: Equatable {
    /// The first message of a connection.
    case hello
    /// An app's `BADownloadManager` call: answered at once on the connection's thread.
    case appImmediate
    /// An app's `AssetPackManager` call: it may wait for a download or a server, so it runs on a task.
    case appAssetPack
    /// A `bahost` command.
    case control

    init(_ request: ServiceRequest) {
        switch request {
        case .hello: self = .hello
        case .setDelegate, .schedule, .startForeground, .cancel, .currentDownloads, .setPlaying: self = .appImmediate
        case .assetPacks, .assetPackStatus, .ensureAssetPack, .cancelAssetPackDownload, .checkForAssetPackUpdates,
            .removeAssetPack, .assetPackLanguages, .setAssetPackLanguage, .reconcileAssetPackLanguages:
            self = .appAssetPack
        case .control: self = .control
        }
    }

    /// Whether a connection introduced with `role` may make requests of this route.
    func allows(_ role: Hello.Role) -> Bool {
        switch self {
        case .hello: true
        case .appImmediate, .appAssetPack: role == .app
        case .control: role == .control
        }
    }
}
