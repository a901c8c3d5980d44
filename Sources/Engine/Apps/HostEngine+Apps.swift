import AppConfig
import CBAExtension
import Foundation
import HostVocabulary
import Queue
import Vocabulary

/// What the service and the command line ask of the engine about installed apps. They speak in these intents and
/// never reach the queue themselves, so that every change that could let a download start wakes the engine, and
/// every wait is on the engine's events rather than on polling.
extension HostEngine {
    public func app(_ appIdentifier: String) throws -> InstalledApp? { try store.app(appIdentifier)?.installed }

    public func installedApps() throws -> [InstalledApp] { try store.apps().map(\.installed) }

    /// Installs the app that `config` declares, with its extension at `extensionPath`, or updates it keeping its
    /// allowance use and launch; `directory` is where the service finds it again (its schedule is made on first
    /// install).
    /// - Parameter allowInsecureLoopback: its downloads may use plain http to loopback hosts (local test servers).
    /// - Parameter sandboxHome: a Flatpak app's own folder (`~/.var/app/APP_ID`), where its container is made; nil
    ///   for a native app. A sandboxed app's group is its alone.
    public func install(
        _ config: AppConfiguration, extensionPath: String, allowInsecureLoopback: Bool = false,
        directory: String? = nil, sandboxHome: String? = nil
    ) throws {
        var app = AppRecord(config, extensionPath: extensionPath, allowInsecureLoopback: allowInsecureLoopback)
        app.sandboxHome = sandboxHome
        if let other = try store.apps().first(where: {
            $0.appIdentifier != app.appIdentifier && $0.appGroupIdentifier == app.appGroupIdentifier
                && ($0.sandboxHome != nil || sandboxHome != nil)
        }) {
            throw EngineError.sharedSandboxedGroup(
                app: app.appIdentifier, group: app.appGroupIdentifier, other: other.appIdentifier)
        }
        if let sandboxHome {
            try FileManager.default.createDirectory(
                atPath: SandboxHomes.containerPath(for: app.appGroupIdentifier, in: sandboxHome),
                withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        try store.install(app)
        dataRoot.sandboxHomes.place(app.appIdentifier, group: app.appGroupIdentifier, home: sandboxHome)
        guard let directory else { return }
        var schedule = try store.schedule(app.appIdentifier)
            ?? AppSchedule(appIdentifier: app.appIdentifier, appDirectory: directory)
        schedule.appDirectory = directory
        try store.saveSchedule(schedule)
    }

    /// The app launched: its initial restrictions lift (downloads that waited for them may start now) and the
    /// launch counts toward its usage.
    /// - Parameter process: the process that runs as the app from now on (`bahost launch APP -- COMMAND` execs it).
    public func launched(
        _ appIdentifier: String, at date: Date, process: ProcessStamp?, nextPeriodic: ([Date]) -> Date?
    ) throws {
        try store.updateApp(appIdentifier) { $0.launched = true }
        try store.updateSchedule(appIdentifier) { schedule in
            schedule.recordLaunch(at: date, process: process)
            if schedule.nextPeriodic == nil { schedule.nextPeriodic = nextPeriodic(schedule.launches) }
        }
        wake()
    }

    /// Whether process `pid` may act as the app: it is, or descends from, a process launched as the app that still
    /// runs (PIDs are matched with their start times, so a reused PID proves nothing).
    public func isLaunchedProcess(_ pid: Int32, of appIdentifier: String) throws -> Bool {
        guard let launched = try store.schedule(appIdentifier)?.launchedProcesses, !launched.isEmpty else { return false }
        return ProcessStamp.ancestry(of: pid).contains { launched.contains($0) }
    }

    /// Development: fetch the app's manifest from `url` (nil: from its `BAManifestURL` again).
    public func overrideManifestURL(_ appIdentifier: String, _ url: String?) throws {
        try store.updateApp(appIdentifier) { $0.manifestURLOverride = url }
    }

    /// The service's record of an app's use, periodic requests and runtime budget.
    public func schedule(_ appIdentifier: String) throws -> AppSchedule? { try store.schedule(appIdentifier) }

    /// Changes an app's schedule (background refresh, runtime budget, periodic decisions) in one transaction.
    public func updateSchedule<T>(_ appIdentifier: String, _ body: (inout AppSchedule) throws -> T) throws -> T {
        try store.updateSchedule(appIdentifier, body)
    }

    /// Marks where an install or update content request begins: its essential downloads, queued after this mark,
    /// are the ones `essentialFailures` reports.
    public func beginEssentialContentRequest(_ appIdentifier: String) throws {
        let sequence = try store.lastSequence()
        try store.updateSchedule(appIdentifier) { $0.contentRequestSequence = sequence }
    }

    /// Waits until none of the app's essential downloads is active (and each essential pack downloaded is installed),
    /// woken by each transfer's end; returns those of the latest install or update that failed.
    public func awaitEssentials(_ appIdentifier: String) async throws -> [DownloadStatus] {
        try await events.waitForTransfers {
            try store.hasActiveDownloads(for: appIdentifier, essential: true)
                || store.hasPendingPackCompletions(for: appIdentifier, essential: true)
        }
        let since = try store.schedule(appIdentifier)?.contentRequestSequence ?? 0
        return try store.failedEssentialDownloads(for: appIdentifier, after: since).map(\.status)
    }

    /// How far the app's essential downloads of its last install or update have come: what `bahost launch`
    /// waits for, as the desktop shows it.
    public func essentialProgress(_ appIdentifier: String) throws -> (received: Int64, expected: Int64, left: Int) {
        let since = try store.schedule(appIdentifier)?.contentRequestSequence ?? 0
        let progress = try store.essentialProgress(for: appIdentifier, after: since)
        return (progress.received, progress.expected, progress.active)
    }

    /// How far the app's foreground downloads have come (the desktop shows it for an app that opts in).
    public func foregroundProgress(_ appIdentifier: String) throws -> (received: Int64, expected: Int64, left: Int) {
        let progress = try store.foregroundProgress(for: appIdentifier)
        return (progress.received, progress.expected, progress.active)
    }

    /// Schedules again, as a non-essential download (Apple's advice for a failed essential one: essential downloads
    /// are only accepted at install and update), an essential download of the app that failed: the desktop's "Try
    /// again".
    public func scheduleAgain(_ appIdentifier: String, identifier: String) -> Result<Void, HostError> {
        var again: Download
        do {
            let since = try store.schedule(appIdentifier)?.contentRequestSequence ?? 0
            guard let failed = try store.failedEssentialDownloads(for: appIdentifier, after: since)
                .last(where: { $0.identifier == identifier })
            else { return .failure(HostError.bahost("no failed essential download '\(identifier)' to try again")) }
            again = failed.download
        } catch {
            return .failure(HostError.bahost("\(error)"))
        }
        again.isEssential = false
        again.uniqueIdentifier = nil
        again.state = BA_DOWNLOAD_STATE_CREATED.rawValue
        return downloads(for: appIdentifier).schedule(again)
    }

    public func activeDownloadCount(_ appIdentifier: String) throws -> Int {
        try store.activeDownloadCount(for: appIdentifier)
    }

    /// Every download of the app, in queue order (`bahost debug downloads`).
    public func allDownloads(_ appIdentifier: String) throws -> [DownloadStatus] {
        try store.downloads(for: appIdentifier).map(\.status)
    }

    /// What the service last did for each app a package declared, and whether it is done.
    public func declaredApps() throws -> [DeclaredAppRecord] { try store.declaredApps() }

    /// Records the action the service is about to carry out for a declared app (or has carried out).
    public func recordDeclaredApp(_ record: DeclaredAppRecord) throws { try store.saveDeclaredApp(record) }

    /// Forgets a declared app whose uninstall is done.
    public func forgetDeclaredApp(_ appIdentifier: String) throws { try store.removeDeclaredApp(appIdentifier) }

    /// The app's last connection to the service closed: its foreground downloads go back to the background (Apple:
    /// they stay in the foreground until the app's download manager disconnects).
    public func appDisconnected(_ appIdentifier: String) throws {
        try store.demoteForeground(appIdentifier: appIdentifier)
    }
}
