import AppConfig
import ExtensionRuntime
import Engine
import Foundation
import HostVocabulary
import Packs
import ServiceWire
import Vocabulary

/// The `bahost` commands the service carries out: install, update, uninstall, launch, and the debug commands
/// (Apple's `backgroundassets-debug`). Each answers with a report for people and one JSON object for scripts.
extension BackgroundAssetsService {
    func control(_ command: ControlCommand, id: UInt64, from session: ClientSession) async -> ServiceReply {
        do {
            switch command {
            case .install(let directory): return try await install(directory, update: false, id: id, session: session)
            case .update(let directory): return try await install(directory, update: true, id: id, session: session)
            case .uninstall(let app): return try uninstall(app)
            case .launch(let app): return try await launch(app, id: id, session: session)
            case .simulate(let app, let name): return try await simulate(app, name, id: id, session: session)
            case .downloads(let app): return try downloads(app)
            case .packs(let app): return try packs(app)
            case .resetBudget(let app):
                try engine.updateSchedule(try installed(app).appIdentifier) { $0.budgetUsedSeconds = 0 }
                return Self.report(true, "\(app): today's runtime budget is reset", ["app": app, "budgetUsedSeconds": 0])
            case .setUnlimitedRuntime(let app, let enabled):
                try engine.updateSchedule(try installed(app).appIdentifier) { $0.unlimitedRuntime = enabled }
                return Self.report(
                    true, "\(app): the daily runtime budget \(enabled ? "no longer applies" : "applies again")",
                    ["app": app, "unlimitedRuntime": enabled])
            case .setMaximumRate(let rate):
                // `bahost debug max-rate` is the person's `rate.all` now, kept in the settings file; it also replaces
                // the daemon's `--max-rate` until the service restarts, as it did.
                engine.limitRate(to: rate)
                return try settingsCommand(.set(key: "rate.all", value: rate.map { "\($0)" } ?? "off"))
            case .settings(let command):
                return try settingsCommand(command)
            case .setBackgroundRefresh(let app, let enabled):
                try engine.updateSchedule(try installed(app).appIdentifier) { $0.backgroundRefresh = enabled }
                return Self.report(
                    true, "\(app): background refresh \(enabled ? "on" : "off")", ["app": app, "backgroundRefresh": enabled])
            case .status:
                return try status()
            case .setConditions(let values):
                guard settings.development else { return Self.notInDevelopment("debug conditions") }
                overrides.withLock { $0 = values }
                return try status()
            case .overrideManifestURL(let app, let url):
                guard settings.development else { return Self.notInDevelopment("debug url-override") }
                if let url {
                    guard let parsed = URLComponents(string: url), ["https", "http"].contains(parsed.scheme ?? ""),
                        parsed.host?.isEmpty == false
                    else { throw ControlError("the override must be an http(s) URL, not '\(url)'") }
                }
                // Apple's override is the device's: without an app, it applies to every managed app.
                let apps = try app.map { [try installed($0).appIdentifier] }
                    ?? engine.installedApps().filter(\.hasManagedAssetPacks).map(\.appIdentifier)
                for app in apps { try engine.overrideManifestURL(app, url) }
                let names = apps.isEmpty ? "no managed app is installed" : apps.joined(separator: ", ")
                let text = url.map { "\(names): manifest fetched from \($0) until cleared" } ?? "\(names): manifest fetched from BAManifestURL"
                return Self.report(true, text, ["apps": apps, "manifestURLOverride": url ?? NSNull()])
            case .advanceClock(let seconds):
                guard settings.development else { return Self.notInDevelopment("debug clock") }
                clock.advance(by: seconds)
                person.changed.fire()
                let decisions = await scheduler.turn(self)
                let text = decisions.isEmpty
                    ? "nothing was due" : decisions.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "\n")
                return Self.report(
                    true, String(format: "the clock is %.0f s ahead\n", clock.offsetSeconds) + text,
                    ["clockOffsetSeconds": clock.offsetSeconds, "decisions": decisions])
            }
        } catch let error as ControlError {
            return Self.report(false, error.message, ["error": error.message])
        } catch {
            return Self.report(false, "\(error)", ["error": "\(error)"])
        }
    }

    // MARK: Install, update, uninstall, launch

    private func install(_ directory: String, update: Bool, id: UInt64, session: ClientSession) async throws -> ServiceReply {
        let folder = URL(fileURLWithPath: directory).standardizedFileURL
        let config = try Self.configuration(in: folder)
        let existing = try engine.app(config.appIdentifier)
        if update && existing == nil { throw ControlError("\(config.appIdentifier) is not installed: install it first") }
        if !update && existing != nil { throw ControlError("\(config.appIdentifier) is already installed: use update") }
        if existing?.sandboxHome != nil {
            throw ControlError(
                "\(config.appIdentifier) is installed from its Flatpak: `flatpak update` updates it, and the service "
                    + "follows")
        }
        try installRecord(config, folder: folder)
        return try await contentRequest(update ? .update : .install, config.appIdentifier, id: id, session: session)
    }

    /// The Info.plist of an app's folder, or why it cannot be installed.
    static func configuration(in folder: URL) throws -> AppConfiguration {
        do {
            return try AppConfiguration(contentsOf: folder.appendingPathComponent("Info.plist"))
        } catch {
            throw ControlError(error.description)
        }
    }

    /// Installs (or updates) the app of `folder` with the engine, as its Info.plist says.
    /// - Parameter sandboxHome: a Flatpak's own folder (`~/.var/app/APP_ID`); nil for a native app.
    func installRecord(_ config: AppConfiguration, folder: URL, sandboxHome: String? = nil) throws {
        let plugin = try Self.extensionPath(in: folder, config: config)
        try engine.install(
            config, extensionPath: plugin, allowInsecureLoopback: settings.allowInsecureLoopback,
            directory: folder.path, sandboxHome: sandboxHome)
    }

    /// Runs a content request. With a session (the command line), it follows the app's events, and install and update
    /// wait for the essential downloads, as the app's launch does; without one (a package's install), nothing waits
    /// for them but the app's launch.
    func contentRequest(_ request: ContentRequest, _ app: String, id: UInt64 = 0, session: ClientSession?) async throws
        -> ServiceReply
    {
        let essentialGate = request == .install || request == .update
        if essentialGate {
            try engine.beginEssentialContentRequest(app)
        }
        if let session { sessions.follow(app, from: session, request: id) }
        defer { if let session { sessions.unfollow(session, request: id) } }
        var json: [String: Any] = ["app": app, "request": request.name]
        var text = "\(app): \(request.name) content request: "
        var success: Bool
        if try installed(app).hasManagedAssetPacks {
            let result = try await engine.packRequest(request, appIdentifier: app)
            if let result {
                json["assetPacksOffered"] = result.offered
                json["assetPacksQueued"] = result.queued
                text += "\(result.offered) asset packs offered, \(result.queued) queued"
            } else {
                json["stopReason"] = "manifestFailed"
                text += "the download manifest could not be fetched"
            }
            success = result != nil
        } else {
            let outcome = try await engine.contentRequest(request, appIdentifier: app)
            success = describe(outcome, text: &text, json: &json)
        }
        if essentialGate && session != nil {
            let failures = try await engine.awaitEssentials(app)
            json["essentialFailures"] = failures.map { ["identifier": $0.identifier, "error": $0.error?.description ?? ""] }
            text += failures.isEmpty
                ? "\nessential downloads done" : "\n" + failures.map { "essential \($0.identifier) failed: \($0.error?.description ?? "")" }.joined(separator: "\n")
            success = success && failures.isEmpty
        }
        json["queued"] = try engine.activeDownloadCount(app)
        return Self.report(success, text, json)
    }

    /// An unmanaged content request's window, for the report.
    private func describe(_ outcome: WindowOutcome?, text: inout String, json: inout [String: Any]) -> Bool {
        guard let outcome else {
            json["stopReason"] = "manifestFailed"
            text += "the manifest could not be fetched"
            return false
        }
        json["stopReason"] = outcome.stopReason.kind
        text += outcome.stopReason.summary
        return outcome.stopReason == .returned
    }

    private func launch(_ app: String, id: UInt64, session: ClientSession) async throws -> ServiceReply {
        _ = try installed(app)
        sessions.follow(app, from: session, request: id)
        defer { sessions.unfollow(session, request: id) }
        let failures = try await showingOnTheDesktop(app) { try await engine.awaitEssentials(app) }
        let now = clock.now
        // `bahost launch APP -- COMMAND` execs the app in its own process: that process, and what it starts, is the app.
        try engine.launched(app, at: now, process: ProcessStamp(pid: session.peerPID)) { launches in
            settings.periodic.next(after: now, launches: launches)
        }
        var text = "\(app) launched"
        if !failures.isEmpty {
            text += "; its essential downloads that failed:\n"
                + failures.map { "  \($0.identifier): \($0.error?.description ?? "")" }.joined(separator: "\n")
        }
        return Self.report(
            failures.isEmpty, text,
            ["app": app, "launched": true,
             "essentialFailures": failures.map { ["identifier": $0.identifier, "error": $0.error?.description ?? ""] }])
    }

    private func uninstall(_ app: String) throws -> ServiceReply {
        _ = try installed(app)
        if let declared = try engine.declaredApps().first(where: { $0.appIdentifier == app }) {
            throw ControlError(
                "\(app) is declared by a package in \(declared.folder): remove the package (or that folder), and the "
                    + "service uninstalls it")
        }
        try engine.uninstall(app)
        return Self.report(true, "\(app) uninstalled", ["app": app, "uninstalled": true])
    }

    private func simulate(_ app: String, _ name: String, id: UInt64, session: ClientSession) async throws -> ServiceReply {
        _ = try installed(app)
        guard let request = ContentRequest(name: name) else {
            throw ControlError("no content request '\(name)': install, update, periodic or language-change")
        }
        return try await contentRequest(request, app, id: id, session: session)
    }

    // MARK: Debug

    private func downloads(_ app: String) throws -> ServiceReply {
        _ = try installed(app)
        let downloads = try engine.allDownloads(app)
        let conditions = engine.networkConditions
        var text = "\(app): \(downloads.count) download\(downloads.count == 1 ? "" : "s")\n"
        var rows: [[String: Any]] = []
        for d in downloads {
            let size = d.download.fileSize
            let progress = size > 0 ? String(format: "%5.1f%%", 100 * Double(d.bytesReceived) / Double(size)) : "     ?"
            var flags: [String] = []
            if d.isEssential { flags.append("essential") }
            if d.foreground { flags.append("foreground") }
            if d.state == .finished || d.state == .failed { flags.append(d.delivered ? "delivered" : "undelivered") }
            text += "  \(d.identifier)  \(d.state.rawValue)  \(progress)  "
                + String(format: "%.1f MiB", Double(d.bytesReceived) / 1_048_576)
                + " of \(LifecycleEvent.size(size))  priority \(d.priority)  \(flags.joined(separator: ", "))"
            if let error = d.error, d.state != .finished { text += "  (\(error))" }
            let formatter = ISO8601DateFormatter()
            let held = [.queued, .waitingForNetwork, .waitingToRetry].contains(d.state) ? conditions.hold(d.networkUse) : nil
            if let held { text += "\n    held: \(held)" }
            if let figures = engine.peerFigures(d.uniqueIdentifier) {
                text += "\n    through peers: \(figures.fromPeers) bytes from peers, "
                    + "\(figures.fromWebSeed) from the CDN (\(figures.peers) peers, \(figures.banned) banned)"
            }
            if d.state == .waitingForNetwork, let since = d.offlineSince {
                text += "\n    no path to its server since \(formatter.string(from: since))"
            }
            if d.state == .waitingForNetwork || d.state == .waitingToRetry, let next = d.retryAt {
                text += "\n    tried again at \(formatter.string(from: next)), or as soon as the network changes"
            }
            text += "\n"
            var row: [String: Any] = [
                "identifier": d.identifier, "uniqueIdentifier": d.uniqueIdentifier, "state": d.state.rawValue,
                "bytesReceived": d.bytesReceived, "fileSize": size, "priority": d.priority, "essential": d.isEssential,
                "foreground": d.foreground, "delivered": d.delivered, "url": d.download.url ?? "",
            ]
            if let error = d.error { row["error"] = LifecycleEvent.json(error) }
            if let since = d.offlineSince { row["offlineSince"] = ISO8601DateFormatter().string(from: since) }
            if let held { row["heldBy"] = "\(held)" }
            if let figures = engine.peerFigures(d.uniqueIdentifier) {
                row["peers"] = [
                    "fromPeers": figures.fromPeers, "fromWebSeed": figures.fromWebSeed, "peers": figures.peers,
                    "banned": figures.banned, "failedPieces": figures.failedPieces,
                ]
            }
            if let next = d.retryAt, d.state == .waitingForNetwork || d.state == .waitingToRetry {
                row["retryAt"] = ISO8601DateFormatter().string(from: next)
            }
            rows.append(row)
        }
        return Self.report(true, text, ["app": app, "downloads": rows])
    }

    private func packs(_ app: String) throws -> ServiceReply {
        guard try installed(app).hasManagedAssetPacks else {
            throw ControlError("\(app) does not manage asset packs (BAHasManagedAssetPacks is not set)")
        }
        let packs = try engine.packs(app)
        var text = "\(app): \(packs.count) asset pack\(packs.count == 1 ? "" : "s")\n"
        var rows: [[String: Any]] = []
        for pack in packs {
            let policy = pack.policy.map(Self.describe) ?? "no longer offered"
            var state = pack.installed.map { "installed version \($0.version), \(LifecycleEvent.size($0.size)) on disk" }
                ?? "not installed"
            if pack.downloading { state += ", downloading" }
            if pack.updateAvailable, let available = pack.availableVersion { state += ", version \(available) available" }
            let language = pack.language.map { "  (\($0))" } ?? ""
            text += "  \(pack.id)\(language)  \(policy)  \(state)\n"
            var row: [String: Any] = [
                "assetPackID": pack.id, "policy": policy, "downloading": pack.downloading, "downloadSize": pack.downloadSize,
            ]
            if let language = pack.language { row["language"] = language }
            if let version = pack.availableVersion { row["availableVersion"] = version }
            if let installed = pack.installed {
                row["installedVersion"] = installed.version
                row["installedSize"] = installed.size
            }
            rows.append(row)
        }
        return Self.report(true, text, ["app": app, "assetPacks": rows])
    }

    private static func describe(_ policy: DownloadPolicy) -> String {
        switch policy {
        case .essential(let events): "essential (\(events.map(\.rawValue).sorted().joined(separator: ", ")))"
        case .prefetch(let events): "prefetch (\(events.map(\.rawValue).sorted().joined(separator: ", ")))"
        case .onDemand: "on demand"
        }
    }

    private func status() throws -> ServiceReply {
        let now = clock.now
        let conditions = self.conditions()
        let policy = settings.periodic
        let formatter = ISO8601DateFormatter()
        func conditionText(_ value: Bool?) -> String { value.map { $0 ? "yes" : "no" } ?? "unknown" }
        var text = "bahost service \(Self.version), extension ABI \(BahostVersion.abi), data in \(settings.dataRoot.url.path)\n"
        if listenerActivated { text += "started by systemd on its socket (bahost.socket)\n" }
        text += String(format: "clock: %@ (%.0f s ahead)\n", formatter.string(from: now), clock.offsetSeconds)
        text += "power saver: \(conditionText(conditions.powerSaver)), battery low: \(conditionText(conditions.batteryLow)), "
            + "metered network: \(conditionText(conditions.metered))\n"
        text += String(
            format: "periodic: every %.0f h for occasional use; daily runtime budget %.0f s\n", policy.interval / 3600,
            policy.dailyRuntime)
        text += "sandbox: \(sandbox.summary)\n" + "  window limits: \(sandbox.containment)\n"
            + sandbox.missing.map { "  not protected: \($0)\n" }.joined()
        let maximumRate = engine.maximumRate
        let currentRate = engine.currentRate
        text += "rate: \(Self.rate(currentRate)) now, \(maximumRate.map { "at most \(Self.rate($0))" } ?? "no limit")"
            + " (`bahost debug max-rate`); background downloads "
            + (engine.backgroundYields ? "yield to other traffic (the delay they add)\n" : "run at full speed, as foreground ones\n")
        let proxies = engine.proxies
        text += "proxy: \(proxies.summary)\n" + proxies.problems.map { "  \($0)\n" }.joined()
        let offline = engine.hostsWaitingForNetwork.sorted { $0.key < $1.key }
        text += offline.isEmpty
            ? "network: no download waits for it\n"
            : "network: no path to \(offline.count) server\(offline.count == 1 ? "" : "s"); their downloads wait for it\n"
                + offline.map { host, wait in
                    "  \(host): since \(formatter.string(from: wait.since)), \(wait.failedProbes) tr\(wait.failedProbes == 1 ? "y" : "ies") in a row, "
                        + "next at \(formatter.string(from: wait.nextProbe)) or when the network changes\n"
                }.joined()
        let network = engine.networkConditions
        let bus = systemBus.withLock { $0 }
        text += "network conditions: " + (bus == nil
            ? "no system bus (NetworkManager and logind not followed)\n"
            : "connectivity \(network.connectivity), metered \(network.metered)"
                + (network.asleep ? ", the machine is going to sleep" : "")
                + ", sleep inhibitor \(bus!.holdsInhibitor ? "held" : "not held")\n")
        if let held = Self.heldSummary(network) { text += "  held: \(held)\n" }
        let (personText, personJSON) = personStatus()
        text += personText
        let peers = engine.peerSummary
        text += "peers: share with \(peers.mode.rawValue)"
            + (peers.mode == .own && !peers.paired ? " (not paired)" : "")
        if peers.running {
            text += ", listening on \(peers.ports.plain)" + (peers.ports.ssl > 0 ? " and \(peers.ports.ssl) (TLS)" : "")
                + ", \(peers.wholeSwarms) archive\(peers.wholeSwarms == 1 ? "" : "s") served"
                + ", sending at most \(peers.uploadRate.map(Self.rate) ?? "without limit")"
                + (peers.notServing.map { " (serving nobody: \($0))" } ?? "") + "\n"
            text += "  since the service started: \(peers.fromPeers) bytes from peers, "
                + "\(peers.fromWebSeed) from the CDN through the swarm; \(peers.sentToPeers) sent to peers\n"
        } else {
            text += ": sharing with nobody\n"
        }
        let declared = declaredAppsStatus.withLock { $0 }
        text += declared.text
        var apps: [[String: Any]] = []
        for app in try engine.installedApps() {
            guard let schedule = try engine.schedule(app.appIdentifier) else { continue }
            let usage = PeriodicPolicy.usage(schedule.launches, now: now)
            let used = policy.runtimeUsed(schedule, now: now)
            let active = try engine.activeDownloadCount(app.appIdentifier)
            text += "\(app.appIdentifier): \(app.launched ? "launched" : "not launched yet"), usage \(usage.rawValue)"
            if let cadence = policy.cadence(usage) { text += String(format: " (every %.1f h)", cadence / 3600) }
            text += ", background refresh \(schedule.backgroundRefresh ? "on" : "off")\n"
            text += String(format: "  runtime today %.1f s of %@", used, schedule.unlimitedRuntime ? "unlimited" : String(format: "%.0f s", policy.dailyRuntime))
            text += ", \(active) active download\(active == 1 ? "" : "s")\n"
            if let next = schedule.nextPeriodic { text += "  next periodic request: \(formatter.string(from: next))\n" }
            if let decision = schedule.lastDecision { text += "  last periodic decision: \(decision)\n" }
            var row: [String: Any] = [
                "app": app.appIdentifier, "directory": schedule.appDirectory, "launched": app.launched,
                "launches": schedule.launches.count, "usage": usage.rawValue, "backgroundRefresh": schedule.backgroundRefresh,
                "runtimeUsedSeconds": used, "unlimitedRuntime": schedule.unlimitedRuntime, "activeDownloads": active,
                "hasDelegate": sessions.hasDelegate(app.appIdentifier),
                "launchedProcesses": schedule.launchedProcesses.filter(\.isAlive).map(\.pid),
            ]
            if let cadence = policy.cadence(usage) { row["cadenceSeconds"] = cadence }
            if let next = schedule.nextPeriodic { row["nextPeriodic"] = formatter.string(from: next) }
            if let last = schedule.lastPeriodic { row["lastPeriodic"] = formatter.string(from: last) }
            if let decision = schedule.lastDecision { row["lastDecision"] = decision }
            apps.append(row)
        }
        let turns = engine.turns
        let milliseconds = { (duration: Duration) in duration.inSeconds * 1000 }
        text += String(
            format: "engine: %d turns, %.3f ms on average, %.3f ms at the longest\n", turns.count,
            milliseconds(turns.mean), milliseconds(turns.longest))
        var conditionJSON: [String: Any] = [:]
        if let v = conditions.powerSaver { conditionJSON["powerSaver"] = v }
        if let v = conditions.batteryLow { conditionJSON["batteryLow"] = v }
        if let v = conditions.metered { conditionJSON["metered"] = v }
        return Self.report(
            true, text,
            ["version": Self.version, "abiVersion": BahostVersion.abi, "clock": formatter.string(from: now), "clockOffsetSeconds": clock.offsetSeconds,
             "conditions": conditionJSON, "apps": apps, "declaredApps": declared.json,
             "network": ["proxy": proxies.json, "currentRate": currentRate,
                         "maximumRate": maximumRate.map { $0 as Any } ?? NSNull(), "backgroundMode": engine.backgroundYields ? "yields" : "fullSpeed",
                         "systemBus": bus != nil, "connectivity": "\(network.connectivity)", "metered": "\(network.metered)",
                         "asleep": network.asleep, "sleepInhibitor": bus?.holdsInhibitor ?? false,
                         "waitingHosts": offline.map { host, wait in
                 ["host": host, "since": formatter.string(from: wait.since), "failedProbes": wait.failedProbes,
                  "nextProbe": formatter.string(from: wait.nextProbe)] as [String: Any]
             }],
             "socketActivated": listenerActivated, "person": personJSON,
             "peers": ["share": peers.mode.rawValue, "paired": peers.paired, "running": peers.running,
                       "notServing": peers.notServing.map { $0 as Any } ?? NSNull(), "port": peers.ports.plain,
                       "sslPort": peers.ports.ssl, "swarms": peers.swarms, "served": peers.wholeSwarms,
                       "uploadRate": peers.uploadRate.map { $0 as Any } ?? NSNull(),
                       "fromPeers": peers.fromPeers, "fromWebSeed": peers.fromWebSeed,
                       "sentToPeers": peers.sentToPeers] as [String: Any],
             "sandbox": ["off": sandbox.off, "pidNamespaces": sandbox.pidNamespaces,
                         "landlockABI": sandbox.landlockABI.map { $0 as Any } ?? NSNull(), "missing": sandbox.missing,
                         "windowCgroups": sandbox.windowCgroups, "windowLimits": sandbox.containment],
             "engine": ["turns": turns.count, "meanTurnMilliseconds": milliseconds(turns.mean),
                        "longestTurnMilliseconds": milliseconds(turns.longest)],
             "policy": ["intervalSeconds": policy.interval, "dailyRuntimeSeconds": policy.dailyRuntime,
                        "lowBatteryPercent": policy.lowBatteryPercent, "skipWhenMetered": policy.skipWhenMetered,
                        "skipInPowerSaver": policy.skipInPowerSaver]])
    }

    /// Which downloads the network's conditions hold back now, in words; nil for none (what the person's settings
    /// hold is said apart: `personStatus`).
    static func heldSummary(_ conditions: NetworkConditions) -> String? {
        if conditions.asleep { return "every download (the machine is going to sleep)" }
        if let hold = conditions.hold(NetworkUse(discretionary: false, access: [], host: "")) { return "every download (\(hold))" }
        guard conditions.isExpensive else { return nil }
        var held = ["background downloads (non-essential, not started in the foreground)",
                    "downloads whose request does not allow expensive networks"]
        if conditions.isConstrained { held.append("downloads whose request does not allow constrained networks") }
        return held.joined(separator: "; ") + " (the network is metered)"
    }

    /// "1.5 MiB/s", "300 KiB/s", "12 B/s".
    static func rate(_ bytesPerSecond: Int64) -> String {
        let value = Double(bytesPerSecond)
        if value >= 1_048_576 { return String(format: "%.1f MiB/s", value / 1_048_576) }
        if value >= 1024 { return String(format: "%.0f KiB/s", value / 1024) }
        return "\(bytesPerSecond) B/s"
    }

    /// The machine's signals, with the development overrides on top.
    func conditions() -> SystemConditions {
        SystemConditionReader(sysfsRoot: settings.sysfsRoot, lowBatteryPercent: settings.periodic.lowBatteryPercent)
            .read().overridden(by: overrides.withLock { $0 })
    }

    // MARK: Helpers

    private func installed(_ app: String) throws -> InstalledApp {
        guard let record = try engine.app(app) else { throw ControlError("no app '\(app)' is installed") }
        return record
    }

    /// The extension of an app folder: `BAHostExtension`, else the folder's one `.so`.
    static func extensionPath(in folder: URL, config: AppConfiguration) throws -> String {
        if let relative = config.extensionPath {
            let path = folder.appendingPathComponent(relative).path
            guard FileManager.default.fileExists(atPath: path) else {
                throw ControlError("BAHostExtension names \(relative), which is not in \(folder.path)")
            }
            return path
        }
        let objects = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".so") }
        guard objects.count == 1 else {
            throw ControlError(
                objects.isEmpty
                    ? "\(folder.path) holds no extension (.so); put it there or name it with BAHostExtension"
                    : "\(folder.path) holds \(objects.count) .so files; name the extension with BAHostExtension")
        }
        return folder.appendingPathComponent(objects[0]).path
    }

    static func report(_ success: Bool, _ text: String, _ json: [String: Any]) -> ServiceReply {
        var object = json
        object["success"] = success
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return .report(ControlReport(success: success, text: text, json: String(decoding: data, as: UTF8.self)))
    }

    static func notInDevelopment(_ command: String) -> ServiceReply {
        report(false, "\(command) needs a service started with bahost daemon --development", ["error": "not in development mode"])
    }
}

struct ControlError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
