import Foundation
import SystemBus
import Vocabulary

/// Reads the real Linux signals: power-profiles-daemon and NetworkManager over the system D-Bus (libsystemd's sd-bus,
/// `SystemBusProperty`), the firmware's platform profile and the power supplies from sysfs.
public struct SystemConditionReader: Sendable {
    public var sysfsRoot: String
    /// Whether the system bus is asked at all (tests of sysfs alone say no).
    public var readsSystemBus: Bool
    public var lowBatteryPercent: Int

    public init(sysfsRoot: String = "/sys", readsSystemBus: Bool = true, lowBatteryPercent: Int = 20) {
        self.sysfsRoot = sysfsRoot
        self.readsSystemBus = readsSystemBus
        self.lowBatteryPercent = lowBatteryPercent
    }
    public func read() -> SystemConditions {
        SystemConditions(powerSaver: powerSaver(), batteryLow: batteryLow(), metered: metered())
    }

    func powerSaver() -> Bool? {
        for (service, path, interface) in [
            ("org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles", "org.freedesktop.UPower.PowerProfiles"),
            ("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles", "net.hadess.PowerProfiles"),
        ] {
            if readsSystemBus, let profile = SystemBusProperty.string(service: service, path: path, interface: interface, name: "ActiveProfile") {
                return profile == "power-saver"
            }
        }
        if let profile = text("firmware/acpi/platform_profile") { return profile == "low-power" }
        return nil
    }

    func metered() -> Bool? {
        guard readsSystemBus else { return nil }
        return SystemBusProperty.uint32(
            service: "org.freedesktop.NetworkManager", path: "/org/freedesktop/NetworkManager",
            interface: "org.freedesktop.NetworkManager", name: "Metered"
        ).flatMap(Self.meteredValue)
    }

    /// NetworkManager's NMMetered: 1 yes and 3 guess-yes are metered, 2 no and 4 guess-no are not, 0 unknown tells
    /// nothing.
    static func meteredValue(_ value: UInt32) -> Bool? {
        switch value {
        case 1, 3: return true
        case 2, 4: return false
        default: return nil
        }
    }

    /// From sysfs `class/power_supply`: nil without supplies; false while a mains or USB supply is online or every
    /// battery is charged above the threshold.
    func batteryLow() -> Bool? {
        let folder = "\(sysfsRoot)/class/power_supply"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder), !names.isEmpty else { return nil }
        var low = false
        var sawBattery = false
        for name in names.sorted() {
            let type = text("class/power_supply/\(name)/type")
            if type == "Mains" || type == "USB" {
                if text("class/power_supply/\(name)/online") == "1" { return false }
                continue
            }
            guard type == "Battery" else { continue }
            sawBattery = true
            let status = text("class/power_supply/\(name)/status")
            if status == "Discharging", let capacity = text("class/power_supply/\(name)/capacity").flatMap(Int.init),
                capacity < lowBatteryPercent
            {
                low = true
            }
        }
        return sawBattery ? low : nil
    }

    private func text(_ relative: String) -> String? {
        (try? String(contentsOfFile: "\(sysfsRoot)/\(relative)", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
