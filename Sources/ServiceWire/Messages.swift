import Glibc
import Vocabulary

/// The messages between the bahost service and its clients: apps (through the SDK's `BADownloadManager`) and the
/// `bahost` command line (control commands). Each is one frame on a `FramedSocket`: compact binary for the hot
/// messages (`CompactCoding`), JSON for the rest (`WireJSON`).
///
/// A client opens with `hello`; every request carries an id that its reply repeats. The service sends apps
/// one-way events (begin, pause, progress) and callbacks that the app must answer (a completion offered to its
/// delegate, an authentication challenge), each with an id of its own.
public enum ServiceProtocol {
    /// Raised when a message changes incompatibly; a hello with another version is refused.
    public static let version = 3

    /// Where the service listens: `$BAHOST_SOCKET`, else `$XDG_RUNTIME_DIR/bahost/service.sock`, else a per-user
    /// folder under /tmp.
    public static var defaultSocketPath: String {
        if let path = ProcessEnvironment.value("BAHOST_SOCKET"), !path.isEmpty { return path }
        if let runtime = ProcessEnvironment.value("XDG_RUNTIME_DIR"), !runtime.isEmpty {
            return "\(runtime)/bahost/service.sock"
        }
        return "/tmp/bahost-\(getuid())/service.sock"
    }
}

// MARK: Client to service

public enum ClientMessage: Codable, Sendable {
    case request(id: UInt64, ServiceRequest)
    /// The answer to `ServiceMessage.callback` with the same id.
    case callbackReply(id: UInt64, CallbackReply)
}

public enum ServiceRequest: Codable, Sendable {
    /// The first message of every connection.
    case hello(Hello)
    /// The app set (true) or cleared (false) `BADownloadManager.shared.delegate`.
    case setDelegate(Bool)
    case schedule(Download)
    case startForeground(Download)
    case cancel(Download)
    case currentDownloads
    /// `AssetPackManager`: the packs the app's download manifest offers to this platform.
    case assetPacks
    /// `AssetPackManager.status(ofAssetPackWithID:)`: an `AssetPack.Status` raw value.
    case assetPackStatus(String)
    /// `ensureLocalAvailability(of:requireLatestVersion:)`: answered once the pack is installed, or failed.
    case ensureAssetPack(String, requireLatestVersion: Bool)
    /// `progress.cancel()` on a pack's download.
    case cancelAssetPackDownload(String)
    /// `checkForUpdates()`.
    case checkForAssetPackUpdates
    /// `remove(assetPackWithID:)`.
    case removeAssetPack(String)
    /// (27) The manifest's primary language and the app's resolved one: answered with `assetPackLanguages`.
    case assetPackLanguages
    /// (27) `resolvedLanguageID = language` (nil: the user's preferred languages).
    case setAssetPackLanguage(String?)
    /// (27) `reconcilePreferredLanguages()`, with the app's preferred languages: answered with `assetPackUpdates`.
    case reconcileAssetPackLanguages(preferred: [String])
    /// A `bahost` command: install, launch, debug…
    case control(ControlCommand)
    /// The app says a game of its runs (true) or no longer (false): while one does, the person's
    /// `game.while-playing` applies, as for a GameMode client. The connection's end is false.
    case setPlaying(Bool)
}

public struct Hello: Codable, Sendable {
    public enum Role: String, Codable, Sendable {
        /// An app process, for its own downloads only.
        case app
        /// The `bahost` command line, for every app of the user.
        case control
    }

    public var protocolVersion: Int
    public var role: Role
    /// An app's CFBundleIdentifier; nil for control.
    public var appIdentifier: String?

    public init(role: Role, appIdentifier: String?) {
        protocolVersion = ServiceProtocol.version
        self.role = role
        self.appIdentifier = appIdentifier
    }
}

/// What the `bahost` command line asks of the service.
public enum ControlCommand: Codable, Sendable {
    case install(appDirectory: String)
    case update(appDirectory: String)
    case uninstall(appIdentifier: String)
    /// Waits for the app's essential downloads, then marks it launched.
    case launch(appIdentifier: String)
    /// A content request now, as the system would send it: install, update, periodic or language-change.
    case simulate(appIdentifier: String, request: String)
    case downloads(appIdentifier: String)
    /// A managed app's asset packs: catalogue, installed versions, policies.
    case packs(appIdentifier: String)
    case resetBudget(appIdentifier: String)
    case setUnlimitedRuntime(appIdentifier: String, enabled: Bool)
    case setBackgroundRefresh(appIdentifier: String, enabled: Bool)
    case status
    /// Development: override what the machine's power and network signals say (nil: read them again).
    case setConditions(SystemConditions)
    /// Development: fetch the app's manifest (every managed app's, when no app is named) from this URL instead of
    /// its `BAManifestURL` (nil: stop).
    case overrideManifestURL(appIdentifier: String?, url: String?)
    /// Development: move the service's clock forward, then run the periodic scheduler.
    case advanceClock(seconds: Double)
    /// The most the downloads may receive together, in bytes a second (nil: no limit): the person's `rate.all`.
    case setMaximumRate(bytesPerSecond: Int64?)
    /// `bahost settings`: the person's settings shown, one set, or one reset to its default.
    case settings(SettingsCommand)
}

/// What `bahost settings` asks of the service.
public enum SettingsCommand: Codable, Sendable, Hashable {
    case show
    case set(key: String, value: String)
    case reset(key: String)
}

/// An app's answer to a callback.
public struct CallbackReply: Codable, Sendable, Hashable {
    /// False when the app's delegate does not implement the method: the service then wakes the extension.
    public var handled: Bool
    /// For a challenge: Apple's `URLSession.AuthChallengeDisposition` raw value.
    public var disposition: Int?
    public var user: String?
    public var password: String?

    public init(handled: Bool, disposition: Int? = nil, user: String? = nil, password: String? = nil) {
        self.handled = handled
        self.disposition = disposition
        self.user = user
        self.password = password
    }
}

// MARK: Service to client

public enum ServiceMessage: Codable, Sendable {
    case reply(id: UInt64, ServiceReply)
    /// A question the app answers with `ClientMessage.callbackReply`.
    case callback(id: UInt64, AppCallback)
    case event(AppEvent)
    /// A line of progress of the control command with this request id.
    case progress(id: UInt64, ProgressLine)
}

public enum ServiceReply: Codable, Sendable {
    case ok
    case hello(HelloReply)
    case downloads([Download])
    case assetPacks([AssetPackInfo])
    case assetPackStatus(Int)
    case assetPackUpdates(updating: [String], removed: [String])
    case assetPackLanguages(primary: String?, resolved: String?)
    case failure(HostError)
    /// A control command's result: for people, and as one JSON object for scripts. `success` false makes the
    /// command line exit non-zero.
    case report(ControlReport)
}

public struct HelloReply: Codable, Sendable {
    public var serviceVersion: String
    /// For an app: the lock file that `withExclusiveControl` takes, shared with its extension's windows.
    public var exclusiveControlLockPath: String?
    /// For an app: its app group, and the container the group's app and extension share.
    public var appGroupIdentifier: String?
    public var containerPath: String?

    public init(
        serviceVersion: String, exclusiveControlLockPath: String? = nil, appGroupIdentifier: String? = nil,
        containerPath: String? = nil
    ) {
        self.serviceVersion = serviceVersion
        self.exclusiveControlLockPath = exclusiveControlLockPath
        self.appGroupIdentifier = appGroupIdentifier
        self.containerPath = containerPath
    }
}

public struct ControlReport: Codable, Sendable {
    public var success: Bool
    public var text: String
    /// One JSON object.
    public var json: String

    public init(success: Bool, text: String, json: String) {
        self.success = success
        self.text = text
        self.json = json
    }
}

public struct ProgressLine: Codable, Sendable {
    public var text: String?
    /// One JSON object.
    public var json: String

    public init(text: String?, json: String) {
        self.text = text
        self.json = json
    }
}

/// Callbacks that go to the app's delegate when it has one.
public enum AppCallback: Codable, Sendable {
    /// The SDK deletes the file, if still there, once the delegate's method returned, and only then answers.
    case finished(Download, filePath: String)
    /// The SDK removes `ticket` once the delegate's method returned, and only then answers (the delivery's proof).
    case failed(Download, HostError, ticket: String)
    case challenge(Download, AuthenticationChallenge)
}

/// One-way events for the app's delegate.
public enum AppEvent: Codable, Sendable {
    case began(Download)
    case paused(Download)
    case progress(Download, bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpected: Int64)
    /// A managed pack's download or installation moved (sent to every connection of the app).
    case assetPack(AssetPackInfo, WirePackUpdate)
}
