import Foundation
import Engine
import HostVocabulary
import PersonSettings
import Vocabulary

/// How the service runs: where it listens and keeps its data, how it downloads, and its periodic policy.
public struct ServiceSettings: Sendable {
    public var socketPath: String
    public var dataRoot: DataRoot
    public var engine: HostEngine.Settings
    public var periodic: PeriodicPolicy
    /// How often the periodic scheduler looks at the apps.
    public var schedulerInterval: Duration
    /// Where the power supplies are read (`/sys`; a folder of the same shape in tests).
    public var sysfsRoot: String
    /// Development: `bahost debug clock` and `bahost debug conditions` are accepted.
    public var development: Bool
    /// Accept plain http to loopback hosts (local test servers only).
    public var allowInsecureLoopback: Bool
    /// How long a delivered download stays in the queue (and in `bahost debug downloads`) before it is pruned.
    public var deliveredRetention: TimeInterval
    /// How long the service waits for an app's delegate to answer a callback (`AppSessions.callbackTimeout`).
    public var appCallbackTimeout: Duration
    /// Where packages declare apps (`DeclaredAppFolders`: the XDG data folders' `bahost/apps`).
    public var declaredAppFolders: [String]
    /// Flatpak installations whose apps may declare themselves (`DeclaredAppFolders.flatpakInstallations`).
    public var flatpakInstallations: [String]
    /// The user's runtime folder (`$XDG_RUNTIME_DIR`): where Flatpak keeps its instances and each app's
    /// `app/APP_ID` folder, where the service puts the app's own socket.
    public var runtimeDirectory: String?
    /// The user's home folder, where each Flatpak app's own folder is (`~/.var/app/APP_ID`).
    public var home: String
    /// The person's settings file (`bahost settings`).
    public var settingsFile: SettingsFile
    /// How long a declared folder must look the same before the service acts on it.
    public var declaredAppSettle: Duration
    /// How long a declared app's folder must stay gone before the service uninstalls the app.
    public var declaredAppRemovalGrace: Duration
    /// The most bytes of events the service keeps for a client that is not reading them, beyond the message being
    /// sent, before it closes the connection (`SessionOutbox`).
    public var unreadBytesLimit: Int
    /// The longest a client may take none of what waits for it before the service closes the connection.
    public var unreadTimeout: Duration
    /// A backlog a client reading as fast as it can never comes near: a burst of events for thousands of downloads.
    public static let standardUnreadBytesLimit = 4 << 20
    public static let standardUnreadTimeout = Duration.seconds(30)

    var declaredApps: DeclaredAppFolders {
        DeclaredAppFolders(roots: declaredAppFolders, flatpakInstallations: flatpakInstallations, home: home)
    }

    public init(
        socketPath: String, dataRoot: DataRoot, engine: HostEngine.Settings, periodic: PeriodicPolicy = PeriodicPolicy(),
        schedulerInterval: Duration = .seconds(60), sysfsRoot: String = "/sys", development: Bool = false,
        allowInsecureLoopback: Bool = false, deliveredRetention: TimeInterval = 7 * 86400,
        appCallbackTimeout: Duration = .seconds(30), declaredAppFolders: [String] = DeclaredAppFolders.standard().roots,
        flatpakInstallations: [String] = DeclaredAppFolders.standard().flatpakInstallations,
        runtimeDirectory: String? = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].flatMap {
            $0.isEmpty ? nil : $0
        },
        home: String = DeclaredAppFolders.standard().home, settingsFile: SettingsFile = .standard(),
        declaredAppSettle: Duration = .seconds(1), declaredAppRemovalGrace: Duration = .seconds(10),
        unreadBytesLimit: Int = Self.standardUnreadBytesLimit, unreadTimeout: Duration = Self.standardUnreadTimeout
    ) {
        self.unreadBytesLimit = unreadBytesLimit
        self.unreadTimeout = unreadTimeout
        self.declaredAppFolders = declaredAppFolders
        self.flatpakInstallations = flatpakInstallations
        self.runtimeDirectory = runtimeDirectory
        self.home = home
        self.settingsFile = settingsFile
        self.declaredAppSettle = declaredAppSettle
        self.declaredAppRemovalGrace = declaredAppRemovalGrace
        self.deliveredRetention = deliveredRetention
        self.appCallbackTimeout = appCallbackTimeout
        self.socketPath = socketPath
        self.dataRoot = dataRoot
        self.engine = engine
        self.periodic = periodic
        self.schedulerInterval = schedulerInterval
        self.sysfsRoot = sysfsRoot
        self.development = development
        self.allowInsecureLoopback = allowInsecureLoopback
    }
}
