import CSystemd
import Glibc

/// One property read from the system bus, on a connection of its own: for the periodic scheduler's few reads a
/// minute (power-profiles-daemon's profile, NetworkManager's metered state), which need no watch. Nil when there is
/// no system bus, no such service, or the property has another type. [any thread; blocks for at most sd-bus's
/// method timeout]
public enum SystemBusProperty {
    public static func string(service: String, path: String, interface: String, name: String) -> String? {
        withBus { bus in
            var value: UnsafeMutablePointer<CChar>?
            guard bahost_bus_get_string(bus, service, path, interface, name, &value) >= 0, let value else { return nil }
            defer { free(value) }
            return String(cString: value)
        }
    }

    public static func uint32(service: String, path: String, interface: String, name: String) -> UInt32? {
        withBus { bus in
            var value: UInt32 = 0
            return bahost_bus_get_trivial(bus, service, path, interface, name, CChar(UInt8(ascii: "u")), &value) >= 0 ? value : nil
        }
    }

    private static func withBus<R>(_ body: (OpaquePointer) -> R?) -> R? {
        var bus: OpaquePointer?
        guard sd_bus_open_system(&bus) >= 0, let bus else { return nil }
        defer { bahost_bus_close(bus) }
        return body(bus)
    }
}
