import Foundation

/// What the service keeps per installed app besides its queue: where the app lives, how it is used (for the
/// cadence of periodic content requests), and its daily extension runtime budget. The engine keeps it in its
/// database (`Queue` stores it by its Codable fields), and the service reads and changes it through the engine.
public struct AppSchedule: Codable, Sendable, Hashable {
    public var appIdentifier: String
    /// The installed app's folder: its Info.plist and extension.
    public var appDirectory: String
    /// Off: no periodic content requests for this app (Apple's per-app Background App Refresh switch).
    public var backgroundRefresh: Bool
    /// The app's recent launches, newest last (at most `launchHistory`).
    public var launches: [Date]
    public var nextPeriodic: Date?
    public var lastPeriodic: Date?
    /// Why the scheduler last ran, or did not run, a periodic request.
    public var lastDecision: String?
    /// The day (`yyyy-MM-dd`, local time) that `budgetUsedSeconds` counts.
    public var budgetDay: String
    /// Seconds of extension runtime used on `budgetDay`.
    public var budgetUsedSeconds: Double
    /// Development override: the daily runtime budget does not apply.
    public var unlimitedRuntime: Bool
    /// The queue's last sequence number when the latest install or update request began: essential downloads
    /// after it are the ones that gate the app's launch.
    public var contentRequestSequence: Int64
    /// The processes `bahost launch` started as this app, while they may live: the app's identity is proved by
    /// descending from one of them (docs/SERVICE.md, "App identity").
    public var launchedProcesses: [ProcessStamp]
    /// (27) The language a managed app set for its localized packs (`resolvedLanguageID`); nil: the user's.
    public var assetPackLanguage: String?
    /// (27) The user's preferred languages as the app last reported them (`reconcilePreferredLanguages()`); nil: the
    /// service's environment's, the same user's.
    public var preferredLanguages: [String]?

    public static let launchHistory = 64

    public init(appIdentifier: String, appDirectory: String) {
        self.appIdentifier = appIdentifier
        self.appDirectory = appDirectory
        backgroundRefresh = true
        launches = []
        budgetDay = ""
        budgetUsedSeconds = 0
        unlimitedRuntime = false
        contentRequestSequence = 0
        launchedProcesses = []
    }

    /// Records a launch, and the process it started as the app (those that ended are forgotten then).
    public mutating func recordLaunch(at date: Date, process: ProcessStamp? = nil) {
        launches.append(date)
        if launches.count > Self.launchHistory { launches.removeFirst(launches.count - Self.launchHistory) }
        launchedProcesses.removeAll { !$0.isAlive }
        if let process { launchedProcesses.append(process) }
    }
}
