import Foundation
import Vocabulary

/// Reads the real Linux signals: power-profiles-daemon and NetworkManager over the system D-Bus (through
/// `busctl`, when both it and the services are there), the firmware's platform profile and the power supplies
/// from sysfs.
///
/// A subprocess rather than a D-Bus library: two property reads a minute do not earn a dependency, and `busctl`
/// ships with systemd wherever these services run.
public struct SystemConditionReader: Sendable {
    public var sysfsRoot: String
    public var busctl: String?
    public var lowBatteryPercent: Int

    public init(sysfsRoot: String = "/sys", busctl: String? = Self.findBusctl(), lowBatteryPercent: Int = 20) {
        self.sysfsRoot = sysfsRoot
        self.busctl = busctl
        self.lowBatteryPercent = lowBatteryPercent
    }

    public static func findBusctl() -> String? {
        ["/usr/bin/busctl", "/bin/busctl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    public func read() -> SystemConditions {
        SystemConditions(powerSaver: powerSaver(), batteryLow: batteryLow(), metered: metered())
    }

    func powerSaver() -> Bool? {
        for (service, path, interface) in [
            ("org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles", "org.freedesktop.UPower.PowerProfiles"),
            ("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles", "net.hadess.PowerProfiles"),
        ] {
            if let value = property(service, path, interface, "ActiveProfile"), let profile = Self.busctlString(value) {
                return profile == "power-saver"
            }
        }
        if let profile = text("firmware/acpi/platform_profile") { return profile == "low-power" }
        return nil
    }

    func metered() -> Bool? {
        guard let value = property(
            "org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager", "org.freedesktop.NetworkManager",
            "Metered")
        else { return nil }
        return Self.meteredValue(value)
    }

    /// NetworkManager's NMMetered, as busctl prints it (`u 4`): 1 yes and 3 guess-yes are metered, 2 no and
    /// 4 guess-no are not, 0 unknown tells nothing.
    static func meteredValue(_ busctlOutput: String) -> Bool? {
        let parts = busctlOutput.split(separator: " ")
        guard parts.count == 2, parts[0] == "u", let value = Int(parts[1]) else { return nil }
        switch value {
        case 1, 3: return true
        case 2, 4: return false
        default: return nil
        }
    }

    /// A string property as busctl prints it: `s "power-saver"`.
    static func busctlString(_ output: String) -> String? {
        guard output.hasPrefix("s \""), output.hasSuffix("\""), output.count >= 4 else { return nil }
        return String(output.dropFirst(3).dropLast())
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

    private func property(_ service: String, _ path: String, _ interface: String, _ name: String) -> String? {
        guard let busctl else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: busctl)
        process.arguments = ["--system", "--timeout=1", "get-property", service, path, interface, name]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
