import Foundation

/// What the desktop shows of an app: its `.desktop` entry's `Name` and `Icon`, from the entry named after the app
/// (`APP.desktop` in `applications/` of the XDG data folders, as `bahost new` and the packages make it). A package
/// wrote the entry: it is read as a regular file of at most 64 KiB, its values cut to 256 characters; without one
/// the app's identifier stands for its name and the icon is generic.
public struct DesktopEntry: Sendable, Hashable {
    public var appIdentifier: String
    public var name: String
    /// An icon name from the theme, or an absolute path; empty for none.
    public var icon: String

    /// The entry's id, as the desktop names the app: `APP.desktop`.
    public var id: String { "\(appIdentifier).desktop" }
    /// The URI the dock's launcher entries use: `application://APP.desktop`.
    public var applicationURI: String { "application://\(id)" }

    public init(appIdentifier: String, name: String, icon: String) {
        self.appIdentifier = appIdentifier
        self.name = name
        self.icon = icon
    }

    static let maximumBytes = 64 << 10
    static let maximumValue = 256

    /// The app's entry from the first data folder that has one.
    public static func find(
        _ appIdentifier: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> DesktopEntry {
        let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(home)/.local/share"
        let dataDirs = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        for folder in [dataHome] + dataDirs {
            if let text = readBounded("\(folder)/applications/\(appIdentifier).desktop") {
                return parse(text, appIdentifier: appIdentifier)
            }
        }
        return DesktopEntry(appIdentifier: appIdentifier, name: appIdentifier, icon: "")
    }

    /// The `[Desktop Entry]` group's unlocalized `Name` and `Icon`.
    static func parse(_ text: String, appIdentifier: String) -> DesktopEntry {
        var entry = DesktopEntry(appIdentifier: appIdentifier, name: appIdentifier, icon: "")
        var inGroup = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let line = line.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("[") {
                inGroup = line == "[Desktop Entry]"
                continue
            }
            guard inGroup, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                .unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }.prefix(maximumValue)
                .map(Character.init))
            guard !value.isEmpty else { continue }
            if key == "Name" { entry.name = value }
            if key == "Icon" { entry.icon = value }
        }
        return entry
    }

    private static func readBounded(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) <= maximumBytes,
            let handle = FileHandle(forReadingAtPath: path)
        else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maximumBytes) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
