import Desktop
import Engine
import Foundation
import HostVocabulary
import PersonSettings
import Synchronization

/// The person's settings in the running service: the last good settings read from the file, what the machine says
/// (GameMode, UPower, power-profiles-daemon, apps that say they are playing), and the decision `PersonRules` made of
/// them, which the engine applies. Inputs are written from the buses' threads and the app connections' threads;
/// `changed` wakes the service's task that decides (`followPersonRules`).
final class PersonPolicy: Sendable {
    struct State: Sendable {
        var settings = PersonSettings.defaults
        /// Why the file was refused at its last reading, while the last good settings stay in force.
        var problem: SettingError?
        var inputs = PersonRules.Inputs()
        /// Per app connection that says it is playing: its app.
        var playing: [ObjectIdentifier: String] = [:]
        var decision: PersonRules.Decision?
    }

    let file: SettingsFile
    let state = Mutex(State())
    /// Fired by each input's change and each settings change: the deciding task looks again.
    let changed = Signal()

    init(file: SettingsFile) { self.file = file }

    /// [any thread] Reads the file, and the pairing beside it: its settings take over, or, when it is refused, the
    /// last good ones stay and the problem is kept to show. Returns the problem.
    @discardableResult
    func reload() -> SettingError? {
        do throws(SettingError) {
            let settings = try file.read()
            let pairing = try PairingFile(beside: file).read()?.pairing
            state.withLock {
                $0.settings = settings
                $0.inputs.pairing = pairing
                $0.problem = nil
            }
            changed.fire()
            return nil
        } catch {
            state.withLock { $0.problem = error }
            return error
        }
    }

    /// [any thread] GameMode's client count (nil: GameMode is not there).
    func gameModeChanged(_ clients: Int?) {
        update { $0.inputs.gameModeClients = clients }
    }

    /// [any thread] UPower and power-profiles-daemon.
    func powerChanged(_ power: PowerState) {
        update { $0.inputs.power = power }
    }

    /// [a connection's thread] An app connection says its game runs, or no longer (its end says no longer).
    func playing(_ connection: ObjectIdentifier, app: String?) {
        update { state in
            state.playing[connection] = app
            state.inputs.appsPlaying = Set(state.playing.values)
        }
    }

    private func update(_ change: (inout State) -> Void) {
        let moved = state.withLock { state in
            let before = state.inputs
            change(&state)
            return state.inputs != before
        }
        if moved { changed.fire() }
    }
}

extension BackgroundAssetsService {
    /// Follows the person's settings file for as long as the service runs: read at start, then at each change
    /// inotify reports in its folder (written by `bahost settings` or by hand).
    func followSettingsFile() async {
        let watcher = FolderWatcher(threadName: "bahost-settings")
        while !Task.isCancelled {
            watcher.arm(roots: [person.file.folder], folders: [])
            if let problem = person.reload() {
                logger.error("settings: \(problem); the last good settings stay in force")
            } else {
                logger.info("settings: \(describeSettings())")
            }
            repeat {
                await watcher.changed.wait(for: .seconds(3600))
            } while !watcher.takeChange() && !Task.isCancelled
        }
    }

    /// Decides, and hands the engine, what the person's settings hold and how fast downloads go, at each change of
    /// the settings or of the machine, and when the schedule opens or closes. `applyPersonRules` has applied them
    /// once before the service listens, so that no download starts under the defaults.
    func followPersonRules() async {
        var applied = applyPersonRules(after: nil)
        while !Task.isCancelled {
            let hour = Duration.seconds(3600)
            let wait = applied.nextChange.map {
                max(Duration.milliseconds(10), Duration.seconds($0.timeIntervalSince(clock.now)))
            }
            await person.changed.wait(for: min(wait ?? hour, hour))
            applied = applyPersonRules(after: applied)
        }
    }

    /// Decides now and hands the engine what changed since `previous` (everything, without one); returns the
    /// decision.
    @discardableResult
    func applyPersonRules(after previous: PersonRules.Decision?) -> PersonRules.Decision {
        let (settings, inputs) = person.state.withLock { ($0.settings, $0.inputs) }
        let decision = PersonRules(settings).decide(inputs, now: clock.now)
        person.state.withLock { $0.decision = decision }
        if previous == nil || decision.hold != previous?.hold {
            logger.info("background downloads \(decision.hold.map { "wait: \($0)" } ?? "may run")")
            engine.personHoldChanged(to: decision.hold)
        }
        if decision.ceilings != previous?.ceilings { engine.limitRates(decision.ceilings) }
        if decision.peers != previous?.peers {
            let serving = decision.peers.notServing.map { ", serving nobody: \($0)" } ?? ""
            logger.info("peers: share with \(decision.peers.mode.rawValue)\(serving)")
            engine.applyPeerRules(decision.peers)
        }
        if engine.storageFloor != settings.storageFloor { engine.storageFloor = settings.storageFloor }
        return decision
    }

    /// Follows GameMode on the session bus; nil without one.
    func watchGameMode() -> GameModeWatch? {
        let watch = GameModeWatch.start { [person, logger] clients in
            logger.info("GameMode: \(clients.map { "\($0) client\($0 == 1 ? "" : "s")" } ?? "not running")")
            person.gameModeChanged(clients)
        }
        if watch == nil { logger.info("no session bus: GameMode is not followed") }
        return watch
    }

    /// The settings in force, in a line for the log.
    func describeSettings() -> String {
        let settings = person.state.withLock { $0.settings }
        let changed = PersonSettings.keys.compactMap { key -> String? in
            guard let value = settings.text(of: key.name), value != PersonSettings.defaults.text(of: key.name) else {
                return nil
            }
            return "\(key.name) = \(value)"
        }
        return "\(person.file.path): " + (changed.isEmpty ? "the defaults" : changed.joined(separator: ", "))
    }
}

extension BackgroundAssetsService {
    /// `bahost debug status`'s lines on the person's settings: the file, what holds background downloads now and
    /// until when, the ceilings, and what the machine says.
    func personStatus() -> (String, [String: Any]) {
        let state = person.state.withLock { $0 }
        var text = "settings: \(person.file.path)"
        if let problem = state.problem {
            let what = (problem.key.isEmpty ? "" : "\(problem.key): ") + problem.problem
            text += " (refused: \(what.printable(limit: 300)); the last good settings are in force)"
        }
        text += "\n"
        var json: [String: Any] = ["file": person.file.path]
        if let problem = state.problem { json["refused"] = problem.description }
        let decision = state.decision ?? PersonRules(state.settings).decide(state.inputs, now: clock.now)
        if let hold = decision.hold {
            text += "  background downloads wait: \(hold), \(hold.until)\n"
            json["held"] = hold.description
            json["until"] = hold.until
        } else {
            text += "  background downloads may run\n"
        }
        func rate(_ value: Int64?) -> String { value.map { Self.rate($0) } ?? "no limit" }
        text += "  ceilings: background downloads \(rate(decision.ceilings.background)), "
            + "every download \(rate(decision.ceilings.all))\n"
        json["backgroundRate"] = decision.ceilings.background.map { $0 as Any } ?? NSNull()
        json["allRate"] = decision.ceilings.all.map { $0 as Any } ?? NSNull()
        let inputs = state.inputs
        func known(_ value: Bool?) -> String { value.map { $0 ? "yes" : "no" } ?? "unknown" }
        text += "  game: " + (inputs.playing ?? (inputs.gameModeClients == nil ? "GameMode not running" : "none"))
            + "; on battery: \(known(inputs.power.onBattery))"
            + (inputs.power.batteryPercent.map { String(format: " (%.0f %%)", $0) } ?? "")
            + "; power saver: \(known(inputs.power.powerSaver))\n"
        json["game"] = inputs.playing ?? NSNull()
        json["gameModeClients"] = inputs.gameModeClients.map { $0 as Any } ?? NSNull()
        json["onBattery"] = inputs.power.onBattery.map { $0 as Any } ?? NSNull()
        json["batteryPercent"] = inputs.power.batteryPercent.map { $0 as Any } ?? NSNull()
        json["powerSaver"] = inputs.power.powerSaver.map { $0 as Any } ?? NSNull()
        return (text, json)
    }
}
