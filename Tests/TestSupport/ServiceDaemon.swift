import Foundation
import Testing

/// A real `bahost daemon` process on a socket and data root of its own, and the apps installed with it.
public final class ServiceDaemon: @unchecked Sendable {
    public let socket: String
    public let dataRoot: URL
    public let log: String
    public let arguments: [String]
    /// What the daemon's environment adds to the tests' own.
    public let environment: [String: String]
    public private(set) var process: Process

    /// Starts a daemon; `extra` adds options (`--daily-runtime 0`, `--sysfs-root DIR`…), `environment` variables
    /// (`LANGUAGE`…).
    public init(dataRoot: URL? = nil, extra: [String] = [], environment: [String: String] = [:]) throws {
        let folder = TestPlugins.scratch.appendingPathComponent("service-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // A runtime folder of its own: the apps' exclusive-control locks live there, and tests running at once install
        // the same app with daemons of their own.
        // And no system or session bus but the test's own (`SystemBusLab`, `DesktopLab`): the machine's NetworkManager
        // must not decide a test, nor a test's notifications reach the desktop of whoever runs it.
        self.environment = [
            "XDG_RUNTIME_DIR": folder.appendingPathComponent("run").path,
            // The person's settings of this daemon's own (`bahost settings`), never those of whoever runs the tests.
            "XDG_CONFIG_HOME": folder.appendingPathComponent("config").path,
            "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(folder.appendingPathComponent("no-system-bus").path)",
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(folder.appendingPathComponent("no-session-bus").path)",
        ].merging(environment) { $1 }
        socket = folder.appendingPathComponent("service.sock").path
        self.dataRoot = dataRoot ?? folder.appendingPathComponent("data")
        log = folder.appendingPathComponent("daemon.log").path
        // Apps declared in a folder of this daemon's own, unless `extra` names one: never the machine's.
        let appsFolder = extra.contains("--apps-folder") ? [] : ["--apps-folder", folder.appendingPathComponent("apps").path]
        arguments = [
            "daemon", "--socket", socket, "--data-root", self.dataRoot.path, "--ca-file", Nginx.shared.caFile,
            "--development", "--retry-delay", "0.05", "--scheduler-interval", "3600", "--budget", "10",
        ] + appsFolder + extra
        process = try Self.launch(arguments, log: log, environment: self.environment)
        try waitForSocket()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    private static func launch(_ arguments: [String], log: String, environment: [String: String]) throws -> Process {
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        output.seekToEndOfFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestPlugins.bahost)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output
        process.standardError = output
        try process.run()
        return process
    }

    private func waitForSocket() throws {
        for _ in 0..<400 {
            if FileManager.default.fileExists(atPath: socket), (try? Bahost.run(["debug", "status", "--socket", socket]))?.status == 0 {
                return
            }
            guard process.isRunning else { throw DaemonError.exited(logText) }
            usleep(25_000)
        }
        throw DaemonError.exited("the daemon did not start listening: \(logText)")
    }

    /// Sends `signal` and waits for the process to end; returns its exit status.
    @discardableResult
    public func stop(_ signal: Int32) -> Int32 {
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Starts the daemon again with the same options and data.
    public func restart() throws {
        process = try Self.launch(arguments, log: log, environment: environment)
        try waitForSocket()
    }

    public var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// `bahost ARGUMENTS --socket S`.
    public func bahost(_ arguments: [String]) throws -> Bahost.Result {
        try Bahost.run(arguments + ["--socket", socket])
    }

    /// `bahost ARGUMENTS --socket S --json`, its last line as one object.
    public func report(_ arguments: [String]) throws -> (status: Int32, report: [String: Any], events: [[String: Any]]) {
        let result = try bahost(arguments + ["--json"])
        let objects = result.events()
        return (result.status, objects.last ?? [:], Array(objects.dropLast()))
    }

    /// Polls `condition` every 50 ms for up to `seconds`.
    public static func waitUntil(_ seconds: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(50_000)
        }
        return try condition()
    }

    /// An app's downloads as `bahost debug downloads` reports them, by identifier.
    public func downloads(_ app: String) throws -> [String: [String: Any]] {
        let rows = try report(["debug", "downloads", "--app", app]).report["downloads"] as? [[String: Any]] ?? []
        return Dictionary(rows.map { ($0["identifier"] as? String ?? "", $0) }, uniquingKeysWith: { $1 })
    }

    public enum DaemonError: Error { case exited(String) }
}

/// An app folder: its Info.plist (Apple's keys, manifest on the test nginx) and its extension.
public struct TestApp: Sendable {
    public let identifier: String
    public let group: String
    public let folder: URL

    public init(
        identifier: String = "com.example.levels", group: String = "group.com.example.levels", manifestURL: String,
        plugin: String, allowance: Int64 = 100_000_000, managedAssetPacks: Bool = false,
        otherKeys: [String: Any] = [:]
    ) throws {
        self.identifier = identifier
        self.group = group
        folder = TestPlugins.scratch.appendingPathComponent("app-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var values: [String: Any] = [
            "CFBundleIdentifier": identifier, "BAAppGroupID": group, "BAManifestURL": manifestURL,
            "BAInitialDownloadRestrictions": [
                "BADownloadAllowance": allowance, "BAEssentialDownloadAllowance": allowance,
                "BADownloadDomainAllowList": ["localhost"],
            ] as [String: Any],
            "BAMaxInstallSize": allowance,
        ]
        if managedAssetPacks { values["BAHasManagedAssetPacks"] = true }
        values.merge(otherKeys) { $1 }
        try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
            .write(to: folder.appendingPathComponent("Info.plist"))
        try FileManager.default.copyItem(atPath: plugin, toPath: folder.appendingPathComponent("extension.so").path)
    }

    /// The app group's container in a data root.
    public func container(in dataRoot: URL) -> URL {
        dataRoot.appendingPathComponent("containers/\(group)")
    }
}

/// The example app as a real process of an app: `levels-app` in Swift, or its C twin over `libbackgroundassets`
/// (`Plugins/C/apps/levels_app.c`, same options and output), so that each app-side test runs through both.
public struct LevelsApp: Sendable, CustomTestStringConvertible {
    public let language: String
    /// Given before the test's own: how the C app takes its callbacks.
    private let mode: [String]
    private let build: @Sendable () throws -> String

    init(language: String, mode: [String] = [], build: @escaping @Sendable () throws -> String) {
        self.language = language
        self.mode = mode
        self.build = build
    }

    public static let swift = LevelsApp(language: "Swift") {
        TestPlugins.buildFolder.appendingPathComponent("levels-app").path
    }
    /// Compiled with `cc` against the header and the library, as a C app's author builds it; its callbacks come
    /// from its own poll loop (`ba_app_fd`, `ba_app_dispatch`).
    public static let c = LevelsApp(language: "C") { try TestPlugins.cApp("apps/levels_app") }
    /// The C app with its callbacks on the library's thread, and exclusive control by the blocking call.
    public static let cOnLibraryThread = LevelsApp(language: "C, callbacks on the library's thread", mode: [
        "--callbacks", "thread",
    ]) { try TestPlugins.cApp("apps/levels_app") }
    public static let all = [swift, c]
    /// `all`, and the C app's other way of taking callbacks.
    public static let everyMode = all + [cOnLibraryThread]

    public var testDescription: String { "levels-app in \(language)" }

    /// The executable (the C one is compiled the first time it is asked for).
    public var path: String {
        get throws { try build() }
    }

    /// Runs it to its end as `app` (launched by `bahost launch`, which proves its identity), with `--json`.
    public func run(_ arguments: [String], app: String, daemon: ServiceDaemon) throws -> Bahost.Result {
        try daemon.launch(app, try path, mode + arguments + ["--json"])
    }

    public func start(_ arguments: [String], app: String, daemon: ServiceDaemon) throws
        -> (process: Process, out: Pipe, err: Pipe)
    {
        try Bahost.start(daemon.launchCommand(app, try path, mode + arguments + ["--json"]))
    }

    /// Runs it to its end without a launch, only claiming to be `app` in its environment, as any process of the user
    /// could (the service refuses it: an app's identity is proved by its launch).
    public func runClaiming(_ arguments: [String], app: String, daemon: ServiceDaemon) throws -> Bahost.Result {
        try Bahost.run(
            mode + arguments + ["--json"], environment: ["BAHOST_APP_IDENTIFIER": app, "BAHOST_SOCKET": daemon.socket],
            executable: try path)
    }
}

/// The managed example app, `packs-app` in Swift or its C twin over `ba/app_asset_packs.h`
/// (`Plugins/C/apps/packs_app.c`, same options and output).
public struct PacksApp: Sendable, CustomTestStringConvertible {
    public let language: String
    private let build: @Sendable () throws -> String

    public static let swift = PacksApp(language: "Swift") {
        TestPlugins.buildFolder.appendingPathComponent("packs-app").path
    }
    public static let c = PacksApp(language: "C") { try TestPlugins.cApp("apps/packs_app") }
    public static let all = [swift, c]

    public var testDescription: String { "packs-app in \(language)" }

    /// The executable (the C one is compiled the first time it is asked for).
    public var path: String {
        get throws { try build() }
    }
}

extension ServiceDaemon {
    /// `bahost launch APP --socket S -- EXECUTABLE ARGUMENTS…`: how an app process runs as `app`.
    public func launchCommand(_ app: String, _ executable: String, _ arguments: [String]) -> [String] {
        ["launch", app, "--socket", socket, "--", executable] + arguments
    }

    /// Runs `executable` to its end as `app`, launched by `bahost launch`, with `environment` added to the tests' own.
    public func launch(
        _ app: String, _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> Bahost.Result {
        try Bahost.run(launchCommand(app, executable, arguments), environment: environment)
    }
}
