import Foundation

/// A private system bus for a test: a real `dbus-daemon` on a socket of its own, with python3-dbusmock's
/// NetworkManager and logind templates on it as the machine's services. Processes given `environment`
/// (`DBUS_SYSTEM_BUS_ADDRESS`) take it for the system bus; the machine's own is never touched.
public final class SystemBusLab: @unchecked Sendable {
    /// Why a test of the system bus cannot run here, or nil.
    public static let unavailable: String? = {
        for tool in ["/usr/bin/dbus-daemon", "/usr/bin/gdbus", "/usr/bin/python3"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (scripts/install-dependencies.sh installs it)"
        }
        guard FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/dbusmock") else {
            return "python3-dbusmock is missing (scripts/install-dependencies.sh installs it)"
        }
        return nil
    }()

    public let folder: URL
    /// The bus's address, for `DBUS_SYSTEM_BUS_ADDRESS`.
    public let address: String
    private let processes = SpawnedProcesses()

    public var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": address] }
    /// The same bus as the session bus too (GameMode's), for a daemon that follows both.
    public var bothBuses: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": address, "DBUS_SESSION_BUS_ADDRESS": address] }

    /// Starts the bus and the stand-ins; NetworkManager's `Metered` starts as `metered` (NMMetered: 1 yes, 2 no,
    /// 3 guess-yes, 4 guess-no). With `power`, UPower (on mains, no battery) and power-profiles-daemon (balanced)
    /// too; with `gameMode`, a GameMode stand-in with `ClientCount` 0 (on the same bus: `bothBuses`).
    public init(metered: UInt32 = 4, power: Bool = false, gameMode: Bool = false) throws {
        folder = TestPlugins.scratch.appendingPathComponent("bus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        address = "unix:path=\(folder.appendingPathComponent("system_bus_socket").path)"
        try spawn("/usr/bin/dbus-daemon", ["--session", "--nofork", "--address=\(address)"], log: "dbus-daemon.log")
        guard wait({ FileManager.default.fileExists(atPath: self.folder.appendingPathComponent("system_bus_socket").path) })
        else { throw LabFailure("dbus-daemon did not start: \(logs)") }
        var templates = ["networkmanager", "logind"]
        var names = ["org.freedesktop.NetworkManager", "org.freedesktop.login1"]
        if power {
            templates += ["upower", "power_profiles_daemon"]
            names += [Self.upower, "net.hadess.PowerProfiles"]
        }
        for template in templates {
            try spawn("/usr/bin/python3", ["-m", "dbusmock", "--system", "--template", template], log: "\(template).log")
        }
        if gameMode {
            _ = try processes.spawn(
                "/usr/bin/python3", ["-m", "dbusmock", Self.gameMode, Self.gameModePath, Self.gameMode],
                environment: bothBuses, log: folder.appendingPathComponent("gamemode.log").path)
            names.append(Self.gameMode)
        }
        for name in names {
            guard wait({ (try? self.call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner", [name]))?
                .contains("true") == true })
            else { throw LabFailure("\(name) did not appear on the test bus: \(logs)") }
        }
        try call(
            Self.networkManager, Self.networkManagerPath, "org.freedesktop.DBus.Mock.AddProperty",
            [Self.networkManager, "Metered", "<uint32 \(metered)>"])
        if gameMode {
            try call(Self.gameMode, Self.gameModePath, "org.freedesktop.DBus.Mock.AddProperty",
                     [Self.gameMode, "ClientCount", "<int32 0>"])
        }
    }

    static let upower = "org.freedesktop.UPower"
    static let gameMode = "com.feralinteractive.GameMode"
    static let gameModePath = "/com/feralinteractive/GameMode"

    /// GameMode's `ClientCount` changes, with its `PropertiesChanged`.
    public func setGameModeClients(_ count: Int32) throws {
        try call(Self.gameMode, Self.gameModePath, "org.freedesktop.DBus.Properties.Set",
                 [Self.gameMode, "ClientCount", "<int32 \(count)>"])
    }

    /// UPower: on battery or not, and a battery at `percent` (the display device: type battery, present).
    public func setBattery(onBattery: Bool, percent: Double) throws {
        try call(Self.upower, "/org/freedesktop/UPower/devices/DisplayDevice", "org.freedesktop.DBus.Mock.SetDeviceProperties",
                 ["/org/freedesktop/UPower/devices/DisplayDevice",
                  "{'Type': <uint32 2>, 'IsPresent': <true>, 'Percentage': <\(percent)>}"])
        try call(Self.upower, "/org/freedesktop/UPower", "org.freedesktop.DBus.Properties.Set",
                 [Self.upower, "OnBattery", "<\(onBattery)>"])
    }

    /// power-profiles-daemon's `ActiveProfile` (power-saver, balanced, performance).
    public func setPowerProfile(_ profile: String) throws {
        try call("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles", "org.freedesktop.DBus.Properties.Set",
                 ["net.hadess.PowerProfiles", "ActiveProfile", "<'\(profile)'>"])
    }

    deinit { close() }

    /// Stops the stand-ins and the bus, and reaps them.
    public func close() { processes.stopAll() }

    static let networkManager = "org.freedesktop.NetworkManager"
    static let networkManagerPath = "/org/freedesktop/NetworkManager"

    /// NetworkManager's `Metered` changes, with its `PropertiesChanged`.
    public func setMetered(_ value: UInt32) throws {
        try call(
            Self.networkManager, Self.networkManagerPath, "org.freedesktop.DBus.Mock.SetProperty",
            [Self.networkManagerPath, Self.networkManager, "Metered", "<uint32 \(value)>"])
    }

    /// NetworkManager's `Connectivity` changes (NMConnectivityState: 1 none, 3 limited, 4 full).
    public func setConnectivity(_ value: UInt32) throws {
        try call(Self.networkManager, Self.networkManagerPath, "org.freedesktop.DBus.Mock.SetConnectivity", ["uint32 \(value)"])
    }

    /// logind's `PrepareForSleep(goingToSleep)`.
    public func prepareForSleep(_ goingToSleep: Bool) throws {
        try call(
            "org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.DBus.Mock.EmitSignal",
            ["org.freedesktop.login1.Manager", "PrepareForSleep", "b", "[<\(goingToSleep)>]"])
    }

    /// Who holds logind's inhibitors now, as `ListInhibitors` prints them ("('sleep', 'bahost', …, 'delay', …)").
    public func inhibitors() throws -> String {
        try call("org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager.ListInhibitors", [])
    }

    /// `gdbus call` on the test bus; returns what it printed.
    @discardableResult
    public func call(_ destination: String, _ path: String, _ method: String, _ arguments: [String]) throws -> String {
        try NetworkLab.run("/usr/bin/gdbus", [
            "call", "--address", address, "--dest", destination, "--object-path", path, "--method", method,
        ] + arguments)
    }

    public var logs: String {
        ["dbus-daemon.log", "networkmanager.log", "logind.log", "upower.log", "power_profiles_daemon.log", "gamemode.log"].map { name in
            "\(name): " + ((try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)) ?? "")
        }.joined(separator: "\n")
    }

    private func spawn(_ executable: String, _ arguments: [String], log: String) throws {
        try processes.spawn(
            executable, arguments, environment: environment, log: folder.appendingPathComponent(log).path)
    }

    private func wait(_ condition: () -> Bool) -> Bool { SpawnedProcesses.wait(condition) }
}
