import Foundation
import Vocabulary

/// One app folder as a scan of the declared-apps folders found it (`DeclaredAppFolders`).
struct ObservedAppFolder: Sendable, Hashable {
    /// The folder's name, which must be the app's `CFBundleIdentifier`.
    var appIdentifier: String
    var folder: String
    /// `CFBundleVersion`, when the folder is a valid app.
    var version: String?
    /// What the scan saw of the folder's files (names, sizes, times): a folder is acted on only once this has not
    /// changed for the settle time, so that a package manager still writing it is never caught half-way.
    var fingerprint: String
    /// Why the folder is not an app the service can install, said as a user reads it; nil when it is one.
    var problem: String?
    /// A Flatpak's declaration: the folder its sandbox gives it (`~/.var/app/APP_ID`), where its container is
    /// made and which proves nothing but where to put files (its identity is proved per connection); nil for a
    /// package's folder.
    var sandboxHome: String?
    /// Folders beyond the app's own to watch for its changes (a Flatpak's links to its deployment).
    var watched: [String] = []

    init(
        appIdentifier: String, folder: String, version: String? = nil, fingerprint: String, problem: String? = nil,
        sandboxHome: String? = nil
    ) {
        self.appIdentifier = appIdentifier
        self.folder = folder
        self.version = version
        self.fingerprint = fingerprint
        self.problem = problem
        self.sandboxHome = sandboxHome
    }
}

/// What the service does for a declared app.
enum DeclaredAppAction: Sendable, Hashable {
    /// A new app: install it and send its extension the install content request.
    case install(ObservedAppFolder)
    /// A new version (or a new folder, or an app the command line installed that a package now declares): update it
    /// and send the update content request.
    case update(ObservedAppFolder, from: String?)
    /// Its folder stayed gone: uninstall it (its downloads and, unless another app shares it, its container).
    case uninstall(appIdentifier: String)
    /// Not an app: refused, said once per change of the folder, never half-installed.
    case refuse(ObservedAppFolder)
}

/// The rules that turn what the folders hold into actions, as a value: what it remembers between scans (how long a
/// folder has looked the same, how long an app has been gone) and what it decides, with no I/O, so that every rule
/// is tested without a folder or a service (`DeclaredAppPlannerTests`).
///
/// - A folder is acted on once it has looked the same for `settle`: a package manager replaces files one at a time.
/// - An app whose folder is gone is uninstalled only once it has stayed gone for `removalGrace` (an upgrade can make
///   a folder look half-gone for a moment), counted afresh at every start.
/// - What the service recorded says what was done: a new version is an update, the same version nothing; an action
///   recorded as under way was interrupted and is carried out again.
/// - An app installed with `bahost install` (no record) that a package now declares is updated from the package's
///   folder; one that no package declares is never uninstalled by this.
struct DeclaredAppPlanner: Sendable {
    var settle: Duration
    var removalGrace: Duration

    private var seen: [String: (fingerprint: String, since: ContinuousClock.Instant)] = [:]
    private var missingSince: [String: ContinuousClock.Instant] = [:]
    private var refused: [String: String] = [:]
    /// Apps the last plan waited for, and why (for `bahost debug status`).
    private(set) var waiting: [String: String] = [:]
    /// Apps whose folder was refused as it stands now.
    var refusedApps: Set<String> { Set(refused.keys) }

    init(settle: Duration, removalGrace: Duration) {
        self.settle = settle
        self.removalGrace = removalGrace
    }

    /// The actions due now, and when to look again if something waits (a folder settling, an app gone for less than
    /// the grace).
    /// - Parameters:
    ///   - observed: the folders found, in precedence order: the first folder of an app wins (the user's own data
    ///     before the system's, as XDG orders them).
    ///   - recorded: what the service did for each declared app.
    ///   - installed: the apps the service has installed, however.
    mutating func plan(
        observed: [ObservedAppFolder], recorded: [DeclaredAppRecord], installed: Set<String>,
        now: ContinuousClock.Instant
    ) -> (actions: [DeclaredAppAction], recheck: ContinuousClock.Instant?) {
        var actions: [DeclaredAppAction] = []
        var recheck: ContinuousClock.Instant?
        func again(at instant: ContinuousClock.Instant) { recheck = min(recheck ?? instant, instant) }
        waiting = [:]

        var folders: [String: ObservedAppFolder] = [:]
        for folder in observed where folders[folder.appIdentifier] == nil { folders[folder.appIdentifier] = folder }
        let records = Dictionary(recorded.map { ($0.appIdentifier, $0) }, uniquingKeysWith: { first, _ in first })

        seen = seen.filter { folders[$0.key]?.fingerprint == $0.value.fingerprint }
        refused = refused.filter { folders[$0.key]?.fingerprint == $0.value }
        for (app, folder) in folders.sorted(by: { $0.key < $1.key }) {
            missingSince[app] = nil
            let since = seen[app]?.since ?? now
            seen[app] = (folder.fingerprint, since)
            guard now - since >= settle else {
                waiting[app] = "its folder changed less than \(settle) ago"
                again(at: since + settle)
                continue
            }
            if folder.problem != nil {
                if refused[app] == nil { actions.append(.refuse(folder)) }
                refused[app] = folder.fingerprint
                continue
            }
            switch records[app] {
            case nil:
                actions.append(installed.contains(app) ? .update(folder, from: nil) : .install(folder))
            case let record? where record.state == .installing:
                actions.append(.install(folder))
            case let record? where record.state != .installed:
                actions.append(.update(folder, from: record.version))
            case let record? where record.version != folder.version || record.folder != folder.folder:
                actions.append(.update(folder, from: record.version))
            default:
                break
            }
        }

        for (app, record) in records.sorted(by: { $0.key < $1.key }) where folders[app] == nil {
            if record.state == .uninstalling {
                actions.append(.uninstall(appIdentifier: app))
                continue
            }
            let since = missingSince[app] ?? now
            missingSince[app] = since
            if now - since >= removalGrace {
                actions.append(.uninstall(appIdentifier: app))
            } else {
                waiting[app] = "its folder has been gone for less than \(removalGrace)"
                again(at: since + removalGrace)
            }
        }
        missingSince = missingSince.filter { records[$0.key] != nil && folders[$0.key] == nil }
        return (actions, recheck)
    }
}
