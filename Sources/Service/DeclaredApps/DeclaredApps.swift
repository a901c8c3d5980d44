import AppConfig
import Foundation
import ServiceWire
import Synchronization
import Vocabulary

/// What `bahost debug status` says of the declared-apps folders: where apps are declared, and what the last
/// reconciliation found and did.
struct DeclaredAppsStatus: Sendable {
    var roots: [String] = []
    var lastReconciliation: Date?
    /// What the last reconciliation that did anything did, one line each ("installed com.example.levels 1.0").
    var lastActions: [String] = []
    /// Folders that are not apps, and why.
    var refused: [String: String] = [:]
    /// Apps the service waits for, and why.
    var waiting: [String: String] = [:]

    var text: String {
        var text = "declared apps: in \(roots.joined(separator: ", "))\n"
        if let at = lastReconciliation {
            text += "  last reconciliation \(ISO8601DateFormatter().string(from: at)): "
                + (lastActions.isEmpty ? "nothing to do" : lastActions.joined(separator: "; ")) + "\n"
        }
        for (folder, problem) in refused.sorted(by: { $0.key < $1.key }) {
            text += "  refused \(folder.printable(limit: 300)): \(problem.printable(limit: 500))\n"
        }
        for (app, why) in waiting.sorted(by: { $0.key < $1.key }) { text += "  waiting for \(app): \(why)\n" }
        return text
    }

    var json: [String: Any] {
        var json: [String: Any] = [
            "folders": roots, "lastActions": lastActions, "refused": refused, "waiting": waiting,
        ]
        if let at = lastReconciliation { json["lastReconciliation"] = ISO8601DateFormatter().string(from: at) }
        return json
    }
}

extension BackgroundAssetsService {
    /// Follows the declared-apps folders for as long as the service runs: reconciles at start (what changed while the
    /// service was not running), then after each change inotify reports, and when a folder settling or an app gone
    /// for less than the grace is due again. Each install, update and uninstall happens once per change of its
    /// folder; one interrupted by a kill is carried out again at the next start.
    func followDeclaredApps() async {
        let folders = settings.declaredApps
        var planner = DeclaredAppPlanner(settle: settings.declaredAppSettle, removalGrace: settings.declaredAppRemovalGrace)
        let watcher = FolderWatcher()
        declaredAppsStatus.withLock { $0.roots = folders.roots + folders.flatpakInstallations }
        logger.info("declared apps: following \(folders.watchedRoots.joined(separator: ", "))")
        var due = true
        var recheck: ContinuousClock.Instant?
        while !Task.isCancelled {
            if due || recheck.map({ ContinuousClock.now >= $0 }) ?? false {
                // The folders to watch come from a first scan; the one reconciled is made after they are watched,
                // so that no change falls between the two.
                watcher.arm(roots: folders.watchedRoots, folders: folders.scan().flatMap { [$0.folder] + $0.watched })
                recheck = await reconcile(observed: folders.scan(), planner: &planner)
                openFlatpakSockets()
            }
            // Until inotify reports a change, or a folder settling or an app gone is due again.
            await watcher.changed.wait(for: recheck.map { max(.zero, $0 - .now) } ?? .seconds(3600))
            due = watcher.takeChange()
        }
    }

    /// One reconciliation: plans what the folders call for and carries it out; returns when to look again.
    private func reconcile(observed: [ObservedAppFolder], planner: inout DeclaredAppPlanner) async
        -> ContinuousClock.Instant?
    {
        let plan: (actions: [DeclaredAppAction], recheck: ContinuousClock.Instant?)
        do {
            plan = planner.plan(
                observed: observed, recorded: try engine.declaredApps(),
                installed: Set(try engine.installedApps().map(\.appIdentifier)), now: .now)
        } catch {
            logger.error("declared apps: the queue cannot be read: \(error)")
            return .now + .seconds(5)
        }
        var done: [String] = []
        for action in plan.actions { done.append(await carryOut(action)) }
        let waiting = planner.waiting, refusedApps = planner.refusedApps
        let refused = Dictionary(
            observed.compactMap { folder in
                refusedApps.contains(folder.appIdentifier) ? folder.problem.map { (folder.folder, $0) } : nil
            }, uniquingKeysWith: { a, _ in a })
        declaredAppsStatus.withLock { status in
            status.refused = refused
            status.waiting = waiting
            if !done.isEmpty || status.lastReconciliation == nil {
                status.lastReconciliation = clock.now
                status.lastActions = done
            }
        }
        return plan.recheck
    }

    /// Carries out one action, recording it first as under way and then as done; returns what it did, in a line.
    private func carryOut(_ action: DeclaredAppAction) async -> String {
        switch action {
        case .refuse(let folder):
            let line = "refused \(folder.folder): \(folder.problem ?? "")"
            logger.warning("declared apps: \(line.printable(limit: 800))")
            return line.printable(limit: 800)
        case .install(let folder):
            return await installDeclared(folder, update: false, from: nil)
        case .update(let folder, let previous):
            return await installDeclared(folder, update: true, from: previous)
        case .uninstall(let app):
            do {
                if var record = try engine.declaredApps().first(where: { $0.appIdentifier == app }) {
                    record.state = .uninstalling
                    try engine.recordDeclaredApp(record)
                }
                if try engine.app(app) != nil { try engine.uninstall(app) }
                try engine.forgetDeclaredApp(app)
                logger.info("declared apps: \(app) uninstalled: its folder is gone")
                return "uninstalled \(app)"
            } catch {
                logger.error("declared apps: uninstalling \(app) failed: \(error)")
                return "uninstalling \(app) failed: \(error)"
            }
        }
    }

    private func installDeclared(_ folder: ObservedAppFolder, update: Bool, from previous: String?) async -> String {
        let app = folder.appIdentifier, version = folder.version ?? ""
        let what = update ? "updated \(app) \(previous ?? "(installed with bahost install)") → \(version)" : "installed \(app) \(version)"
        do {
            let url = URL(fileURLWithPath: folder.folder)
            let config = try Self.configuration(in: url)
            try engine.recordDeclaredApp(DeclaredAppRecord(
                appIdentifier: app, folder: folder.folder, version: version, state: update ? .updating : .installing))
            try installRecord(config, folder: url, sandboxHome: folder.sandboxHome)
            let reply = try await contentRequest(update ? .update : .install, app, session: nil)
            try engine.recordDeclaredApp(
                DeclaredAppRecord(appIdentifier: app, folder: folder.folder, version: version, state: .installed))
            let outcome = Self.replyText(reply)
            logger.info("declared apps: \(what) from \(folder.folder): \(outcome)")
            return "\(what): \(outcome)"
        } catch let error as ControlError {
            logger.error("declared apps: \(app) from \(folder.folder): \(error.message)")
            return "\(app) from \(folder.folder) failed: \(error.message)"
        } catch {
            logger.error("declared apps: \(app) from \(folder.folder): \(error)")
            return "\(app) from \(folder.folder) failed: \(error)"
        }
    }

    private static func replyText(_ reply: ServiceReply) -> String {
        if case .report(let report) = reply { return report.text.replacingOccurrences(of: "\n", with: "; ") }
        return "\(reply)"
    }
}
