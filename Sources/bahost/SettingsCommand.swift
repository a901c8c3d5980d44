import ArgumentParser
import Foundation
import PersonSettings
import ServiceWire

/// `bahost settings`: what the person decides about background downloads (docs/DOWNLOADS.md, "What the person
/// decides"). With the service running, it changes them through the service, which writes the file and applies them
/// at once; without one, it edits the file, which the service reads when it starts.
struct Settings: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Show or change what you decide about background downloads.",
        discussion: """
            The settings live in $XDG_CONFIG_HOME/bahost/settings.toml (~/.config/bahost/settings.toml), which you \
            may also edit by hand: the service takes a change at once, and refuses a bad one, naming the key, while \
            the last good settings stay in force. Essential downloads and those started in the foreground are never \
            held by a schedule, a game or the battery.
            """,
        subcommands: [Show.self, Set.self, Reset.self], defaultSubcommand: Show.self)

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Every setting, its value, its default, and what it means.")
        @OptionGroup var service: ServiceOptions
        func run() throws { try Settings.carryOut(.show, service) }
    }

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set", abstract: "Change one setting (bahost settings show lists them).",
            discussion: "Examples: rate.background 2M; schedule.hours 01:00-07:00; game.while-playing 512K; "
                + "power.battery-below 50; storage.floor-size 5G.")
        @Argument(help: "The setting, e.g. rate.background.") var key: String
        @Argument(help: "Its value, e.g. 2M, off, 01:00-07:00, wait.") var value: String
        @OptionGroup var service: ServiceOptions
        func run() throws { try Settings.carryOut(.set(key: key, value: value), service) }
    }

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "reset", abstract: "Set one setting back to its default.")
        @Argument(help: "The setting, e.g. rate.background.") var key: String
        @OptionGroup var service: ServiceOptions
        func run() throws { try Settings.carryOut(.reset(key: key), service) }
    }

    /// Through the running service; when none answers, on the file itself.
    static func carryOut(_ command: SettingsCommand, _ service: ServiceOptions) throws {
        let path = service.socket ?? ServiceProtocol.defaultSocketPath
        if (try? FramedSocket.connect(to: path)).map({ $0.close() }) != nil {
            try service.run(.settings(command))
            return
        }
        let file = SettingsFile.standard()
        do throws(SettingError) {
            var settings = try file.read()
            switch command {
            case .show: break
            case .set(let key, let value): try settings.set(key, to: value)
            case .reset(let key): try settings.reset(key)
            }
            if command != .show { try file.write(settings) }
            let note = command == .show ? "" : "saved; no service is running: it takes them when it starts\n"
            ServiceOptions.output(service.json ? Self.json(settings, file) : note + Self.text(settings, file))
        } catch {
            Output.standardError("bahost: \(error)\n")
            throw ExitCode(2)
        }
    }

    static func text(_ settings: PersonSettings, _ file: SettingsFile) -> String {
        var text = "settings: \(file.path)\n"
        for key in PersonSettings.keys {
            let value = settings.text(of: key.name) ?? "", standard = PersonSettings.defaults.text(of: key.name) ?? ""
            text += "  \(key.name) = \(value)" + (value == standard ? "" : "  (default \(standard))") + "\n"
                + "      \(key.meaning); \(key.values)\n"
        }
        return text
    }

    static func json(_ settings: PersonSettings, _ file: SettingsFile) -> String {
        let rows = PersonSettings.keys.map { key -> [String: String] in
            ["key": key.name, "value": settings.text(of: key.name) ?? "", "default": PersonSettings.defaults.text(of: key.name) ?? "",
             "meaning": key.meaning, "values": key.values]
        }
        let data = (try? JSONSerialization.data(withJSONObject: ["file": file.path, "settings": rows], options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
