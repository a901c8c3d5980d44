import Foundation
import HostVocabulary
import PersonSettings
import ServiceWire

/// `bahost settings`, carried out by the running service: it writes the file and takes it at once, so that a
/// setting applies before the command returns (the file's watch would take it a moment later anyway).
extension BackgroundAssetsService {
    func settingsCommand(_ command: SettingsCommand) throws -> ServiceReply {
        switch command {
        case .show:
            return settingsReport(note: nil)
        case .set(let key, let value):
            try changeSettings { (settings: inout PersonSettings) throws(SettingError) in
                try settings.set(key, to: value)
            }
            return settingsReport(note: "\(key) = \(person.state.withLock { $0.settings }.text(of: key) ?? value)")
        case .reset(let key):
            try changeSettings { (settings: inout PersonSettings) throws(SettingError) in try settings.reset(key) }
            return settingsReport(note: "\(key) is back to its default")
        }
    }

    /// Changes the settings the file holds, writes them whole and takes them. A file that is refused now is not
    /// overwritten: the person's own edit would be lost.
    private func changeSettings(_ change: (inout PersonSettings) throws(SettingError) -> Void) throws {
        var settings: PersonSettings
        do {
            settings = try person.file.read()
        } catch {
            throw ControlError("\(error); fix it (or remove it) first: the service keeps its last good settings")
        }
        do throws(SettingError) {
            try change(&settings)
            try person.file.write(settings)
        } catch {
            throw ControlError(error.description)
        }
        if let problem = person.reload() { throw ControlError(problem.description) }
        logger.info("settings: \(describeSettings())")
    }

    /// Every setting, its value in force and its default, and what holds background downloads now.
    func settingsReport(note: String?) -> ServiceReply {
        let state = person.state.withLock { $0 }
        var text = note.map { "\($0)\n" } ?? ""
        text += "settings: \(person.file.path)\n"
        if let problem = state.problem {
            text += "  refused: \(problem.description.printable(limit: 500)); the last good settings are in force\n"
        }
        var rows: [[String: Any]] = []
        for key in PersonSettings.keys {
            let value = state.settings.text(of: key.name) ?? ""
            let standard = PersonSettings.defaults.text(of: key.name) ?? ""
            text += "  \(key.name) = \(value)" + (value == standard ? "" : "  (default \(standard))") + "\n"
                + "      \(key.meaning); \(key.values)\n"
            rows.append(["key": key.name, "value": value, "default": standard, "meaning": key.meaning,
                         "values": key.values])
        }
        var json: [String: Any] = ["file": person.file.path, "settings": rows]
        if let problem = state.problem { json["refused"] = problem.description }
        return Self.report(true, text, json)
    }
}
