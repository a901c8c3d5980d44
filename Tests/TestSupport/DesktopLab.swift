import Foundation

/// A desktop for a test: an X server (Xvfb), a session bus of its own (`dbus-daemon`), a real notification server
/// (dunst) drawing on that screen, and `dbus-monitor` writing down what crosses the bus. Processes given
/// `environment` use that display and bus; the desktop of whoever runs the tests is never touched.
public final class DesktopLab: @unchecked Sendable {
    /// Why a desktop test cannot run here, or nil.
    public static let unavailable: String? = {
        for tool in ["/usr/bin/Xvfb", "/usr/bin/dbus-daemon", "/usr/bin/dunst", "/usr/bin/dunstctl", "/usr/bin/dbus-monitor",
                     "/usr/bin/scrot"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (scripts/install-dependencies.sh installs it)"
        }
        return nil
    }()

    public let folder: URL
    public let address: String
    public let display: String
    /// `$XDG_DATA_HOME` for the service: where `applications/APP.desktop` entries go.
    public let dataHome: URL
    private let processes = SpawnedProcesses()

    public var environment: [String: String] {
        ["DBUS_SESSION_BUS_ADDRESS": address, "DISPLAY": display, "XDG_DATA_HOME": dataHome.path]
    }

    public init() throws {
        folder = TestPlugins.scratch.appendingPathComponent("desktop-\(UUID().uuidString.prefix(8))")
        dataHome = folder.appendingPathComponent("share")
        try FileManager.default.createDirectory(
            at: dataHome.appendingPathComponent("applications"), withIntermediateDirectories: true)
        address = "unix:path=\(folder.appendingPathComponent("session_bus_socket").path)"
        // A display number no X server holds (its lock file).
        display = ":\((100..<600).first { !FileManager.default.fileExists(atPath: "/tmp/.X\($0)-lock") } ?? 599)"
        do {
            try processes.spawn(
                "/usr/bin/Xvfb", [display, "-screen", "0", "800x600x24", "-nolisten", "tcp"], environment: [:],
                log: log("xvfb"))
            try processes.spawn(
                "/usr/bin/dbus-daemon", ["--session", "--nofork", "--address=\(address)"], environment: [:],
                log: log("dbus-daemon"))
            guard SpawnedProcesses.wait({
                FileManager.default.fileExists(atPath: self.folder.appendingPathComponent("session_bus_socket").path)
                    && FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(self.display.dropFirst())")
            }) else { throw LabFailure("the display or the bus did not start: \(logs)") }
            try processes.spawn(
                "/usr/bin/dbus-monitor",
                ["--address", address, "interface='org.freedesktop.Notifications'",
                 "interface='com.canonical.Unity.LauncherEntry'"],
                environment: [:], log: log("monitor"))
            try processes.spawn("/usr/bin/dunst", [], environment: environment, log: log("dunst"))
            guard SpawnedProcesses.wait({ (try? self.dunstctl(["count", "displayed"])) != nil }) else {
                throw LabFailure("dunst did not start: \(logs)")
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    public func close() { processes.stopAll() }

    /// The app's `.desktop` entry, where the service looks for it.
    public func writeDesktopEntry(_ appIdentifier: String, name: String, icon: String) throws {
        try """
            [Desktop Entry]
            Type=Application
            Name=\(name)
            Icon=\(icon)
            Exec=bahost launch \(appIdentifier) -- true
            """.write(
                to: dataHome.appendingPathComponent("applications/\(appIdentifier).desktop"), atomically: true,
                encoding: .utf8)
    }

    /// What `dbus-monitor` saw on the bus so far.
    public var monitored: String {
        (try? String(contentsOf: folder.appendingPathComponent("monitor.log"), encoding: .utf8)) ?? ""
    }

    /// `dunstctl ARGUMENTS` on the lab's bus; what it printed.
    @discardableResult
    public func dunstctl(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dunstctl")
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw LabFailure("dunstctl \(arguments) failed") }
        return String(decoding: data, as: UTF8.self)
    }

    /// A PNG of the whole screen at `path` (scrot).
    public func screenshot(to path: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/scrot")
        process.arguments = ["--overwrite", path]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw LabFailure("scrot failed (\(process.terminationStatus))") }
    }

    public var logs: String {
        ["xvfb", "dbus-daemon", "dunst"].map { name in
            "\(name): " + ((try? String(contentsOf: folder.appendingPathComponent("\(name).log"), encoding: .utf8)) ?? "")
        }.joined(separator: "\n")
    }

    private func log(_ name: String) -> String { folder.appendingPathComponent("\(name).log").path }
}
