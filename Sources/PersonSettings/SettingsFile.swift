import Foundation
import TOMLKit

/// The person's settings file: `$XDG_CONFIG_HOME/bahost/settings.toml` (`~/.config/bahost/settings.toml`), TOML read
/// by toml++ (TOMLKit). Each setting is `key = value` in the table of its first word:
///
///     [rate]
///     background = "2M"
///     [schedule]
///     hours = "01:00-07:00"
///
/// A value may be a string or a number (`battery-below = 20`). What the file does not say is the default. A file
/// that does not parse, a table or key that is not a setting, or a value a setting does not take is refused, naming
/// the key and the file; the service then keeps the settings it last took.
public struct SettingsFile: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// The most bytes read: a settings file is a few hundred.
    public static let maximumSize = 64 * 1024

    /// The user's file: `$XDG_CONFIG_HOME/bahost/settings.toml`, else `$HOME/.config/bahost/settings.toml`.
    public static func standard(environment: [String: String] = ProcessInfo.processInfo.environment) -> SettingsFile {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return SettingsFile(path: "\(config)/bahost/settings.toml")
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return SettingsFile(path: "\(home)/.config/bahost/settings.toml")
    }

    /// The folder that holds it (watched for its changes).
    public var folder: String { (path as NSString).deletingLastPathComponent }

    /// Reads the file: the defaults when there is none.
    public func read() throws(SettingError) -> PersonSettings {
        guard FileManager.default.fileExists(atPath: path) else { return .defaults }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingError(key: "", "cannot be read", file: path)
        }
        guard data.count <= Self.maximumSize else {
            throw SettingError(key: "", "is \(data.count) bytes, over the \(Self.maximumSize) a settings file may be", file: path)
        }
        return try Self.parse(String(decoding: data, as: UTF8.self), file: path)
    }

    /// The settings a TOML text says.
    public static func parse(_ text: String, file: String? = nil) throws(SettingError) -> PersonSettings {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw SettingError(
                key: "", "line \(error.source.begin.line), column \(error.source.begin.column): \(error.description)",
                file: file)
        } catch {
            throw SettingError(key: "", "is not TOML: \(error)", file: file)
        }
        var settings = PersonSettings()
        let sections = Set(PersonSettings.keys.map { String($0.name.prefix { $0 != "." }) })
        for section in table.keys.sorted() {
            guard sections.contains(section), let values = table[section]?.table else {
                throw SettingError(
                    key: section, "is not a table of settings (the tables: \(sections.sorted().joined(separator: ", ")))",
                    file: file)
            }
            for name in values.keys.sorted() {
                let key = "\(section).\(name)"
                let value = values[name]
                let text: String
                if let string = value?.string {
                    text = string
                } else if let number = value?.int {
                    text = "\(number)"
                } else {
                    throw SettingError(key: key, "must be a string or a whole number", file: file)
                }
                do {
                    try settings.set(key, to: text)
                } catch {
                    var located = error
                    located.file = file
                    throw located
                }
            }
        }
        return settings
    }

    /// The settings as the file holds them: every setting that is not its default, each in its table, under a
    /// header that says where the rest is described.
    public static func render(_ settings: PersonSettings) -> String {
        var text = """
            # bahost: what you decide about background downloads (docs/DOWNLOADS.md, "What the person decides").
            # `bahost settings show` lists every setting; what this file does not say is the default.

            """
        var section = ""
        for key in PersonSettings.keys {
            guard let value = settings.text(of: key.name), value != PersonSettings.defaults.text(of: key.name) else {
                continue
            }
            let table = String(key.name.prefix { $0 != "." })
            if table != section {
                text += "\n[\(table)]\n"
                section = table
            }
            let name = key.name.dropFirst(table.count + 1)
            text += "\(name) = \"\(value)\"\n"
        }
        return text
    }

    /// Writes the settings, whole, in one rename: a reader sees the old file or the new one, never half of it.
    public func write(_ settings: PersonSettings) throws(SettingError) {
        try Self.replace(path, with: Data(Self.render(settings).utf8), mode: 0o644)
    }

    /// Writes `data` to `path` whole, in one rename, the file made with `mode`: a reader (the service, watching the
    /// folder) sees the old file or the new one, never half of it.
    static func replace(_ path: String, with data: Data, mode: mode_t) throws(SettingError) {
        let folder = (path as NSString).deletingLastPathComponent
        let temporary = "\(folder)/.\((path as NSString).lastPathComponent).\(getpid())"
        func failure(_ why: String) -> SettingError { SettingError(key: "", "cannot be written: \(why)", file: path) }
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
            guard fd >= 0 else { throw failure(String(cString: strerror(errno))) }
            let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            try handle.write(contentsOf: data)
            try handle.synchronize()
            guard rename(temporary, path) == 0 else {
                let code = errno
                unlink(temporary)
                throw failure(String(cString: strerror(code)))
            }
        } catch let error as SettingError {
            throw error
        } catch {
            unlink(temporary)
            throw failure("\(error)")
        }
    }
}
