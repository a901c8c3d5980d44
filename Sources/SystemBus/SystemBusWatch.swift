import CHostSupport
import CSystemd
import Foundation
import Glibc
import HostVocabulary
import Synchronization

/// The service's watch of the system bus, through libsystemd's sd-bus: NetworkManager's connectivity and metered
/// state (read at start, then at each `PropertiesChanged` and each time NetworkManager appears or leaves), UPower's
/// battery and power-profiles-daemon's profile (the same way), and logind's `PrepareForSleep`, with a delay inhibitor so that the service can stop its transfers and sync their files
/// before the machine sleeps. Without a system bus, or without either service on it, it reports nothing and the
/// service behaves as without it (the kernel's routes alone say where the network is).
///
/// One thread, which this object owns, holds the bus connection and runs every callback; the handlers are called on
/// it and must not block (the sleep handler gets a `release` to call, from any thread, when it is done).
public final class SystemBusWatch: @unchecked Sendable {  // safe: `bus` is touched on the watch's thread only
    public struct Handlers: Sendable {
        /// NetworkManager's connectivity and metered state changed (`asleep` is always false here).
        public var networkChanged: @Sendable (NetworkConditions) -> Void
        /// logind: the machine is about to sleep (true), or woke (false). For true, `release` lets the sleep go on.
        public var sleep: @Sendable (_ goingToSleep: Bool, _ release: @escaping @Sendable () -> Void) -> Void
        /// UPower (on battery, the battery's charge) or power-profiles-daemon (power saver) said something new.
        public var powerChanged: @Sendable (PowerState) -> Void

        public init(
            networkChanged: @escaping @Sendable (NetworkConditions) -> Void,
            sleep: @escaping @Sendable (Bool, @escaping @Sendable () -> Void) -> Void,
            powerChanged: @escaping @Sendable (PowerState) -> Void = { _ in }
        ) {
            self.networkChanged = networkChanged
            self.sleep = sleep
            self.powerChanged = powerChanged
        }
    }

    private let handlers: Handlers
    private var bus: OpaquePointer?
    private var slots: [OpaquePointer?] = []
    /// A pipe whose write end, written, ends the thread.
    private let stopPipe: (read: Int32, write: Int32)
    private let stopped = Atomic<Bool>(false)
    private let thread = Mutex<OwnedThread?>(nil)
    /// The held delay inhibitor's descriptor, -1 when none: released before a sleep, taken again after it.
    private let inhibitor = Mutex<Int32>(-1)
    /// What NetworkManager said last, so that a `PropertiesChanged` of something else reports nothing.
    private var lastReported: NetworkConditions?
    /// What UPower and power-profiles-daemon said last.
    private var lastPower: PowerState?

    /// Connects to the system bus (`address`, else `$DBUS_SYSTEM_BUS_ADDRESS`, else the standard socket) and starts
    /// the thread; nil, with why, when there is no system bus.
    public static func start(handlers: Handlers, address: String? = nil) -> Result<SystemBusWatch, SystemBusError> {
        var bus: OpaquePointer?
        let r = address.map { bahost_bus_open_address($0, &bus) } ?? sd_bus_open_system(&bus)
        guard r >= 0, let bus else { return .failure(SystemBusError(operation: "connecting to the system bus", code: r)) }
        let watch = SystemBusWatch(bus: bus, handlers: handlers)
        if let error = watch.subscribe() {
            watch.closeBus()
            return .failure(error)
        }
        guard let thread = OwnedThread(name: "bahost-sys-bus", { watch.run() }) else {
            watch.closeBus()
            return .failure(SystemBusError(operation: "starting the system bus's thread", code: -EAGAIN))
        }
        watch.thread.withLock { $0 = thread }
        return .success(watch)
    }

    deinit {
        close(stopPipe.read)
        close(stopPipe.write)
    }

    private init(bus: OpaquePointer, handlers: Handlers) {
        self.bus = bus
        self.handlers = handlers
        var ends: [Int32] = [-1, -1]
        _ = bahost_wake_pipe(&ends)
        stopPipe = (ends[0], ends[1])
    }

    /// The matches, the first reading of NetworkManager and the inhibitor, before the thread starts.
    private func subscribe() -> SystemBusError? {
        let context = Unmanaged.passUnretained(self).toOpaque()
        var matches: [(String, sd_bus_message_handler_t)] = [
            ("type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.networkManager)'",
             { _, context, _ in SystemBusWatch.from(context).readNetworkManager(); return 0 }),
            ("type='signal',sender='\(Self.networkManager)',path='\(Self.networkManagerPath)',"
                + "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',arg0='\(Self.networkManager)'",
             { _, context, _ in SystemBusWatch.from(context).readNetworkManager(); return 0 }),
            ("type='signal',sender='org.freedesktop.login1',path='/org/freedesktop/login1',"
                + "interface='org.freedesktop.login1.Manager',member='PrepareForSleep'",
             { message, context, _ in
                var goingToSleep: Int32 = 0
                guard bahost_bus_read_bool(message, &goingToSleep) >= 0 else { return 0 }
                SystemBusWatch.from(context).prepareForSleep(goingToSleep != 0)
                return 0
             }),
        ]
        // UPower (the machine and its display device, the battery's summary) and power-profiles-daemon under either
        // of its names: any of their properties changing, or any of them appearing or leaving, is read again.
        for (service, path) in [
            (Self.upower, "/org/freedesktop/UPower"), (Self.upower, Self.displayDevice),
            (Self.powerProfiles, "/org/freedesktop/UPower/PowerProfiles"), (Self.oldPowerProfiles, "/net/hadess/PowerProfiles"),
        ] {
            matches.append((
                "type='signal',sender='\(service)',path='\(path)',interface='org.freedesktop.DBus.Properties',"
                    + "member='PropertiesChanged'",
                { _, context, _ in SystemBusWatch.from(context).readPower(); return 0 }))
        }
        for service in [Self.upower, Self.powerProfiles, Self.oldPowerProfiles] {
            matches.append((
                "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                    + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(service)'",
                { _, context, _ in SystemBusWatch.from(context).readPower(); return 0 }))
        }
        for (rule, handler) in matches {
            var slot: OpaquePointer?
            let r = sd_bus_add_match(bus, &slot, rule, handler, context)
            guard r >= 0 else { return SystemBusError(operation: "subscribing to \(rule)", code: r) }
            slots.append(slot)
        }
        readNetworkManager()
        readPower()
        takeInhibitor()
        return nil
    }

    static let upower = "org.freedesktop.UPower"
    static let displayDevice = "/org/freedesktop/UPower/devices/DisplayDevice"
    static let powerProfiles = "org.freedesktop.UPower.PowerProfiles"
    static let oldPowerProfiles = "net.hadess.PowerProfiles"

    /// Reads UPower's `OnBattery` and its display device's `Percentage` (when it is a present battery), and
    /// power-profiles-daemon's `ActiveProfile`, and reports them when they changed; what a service does not say is
    /// unknown. [watch thread]
    private func readPower() {
        var onBattery: Int32 = 0
        var present: Int32 = 0
        var type: UInt32 = 0
        var percent: Double = 0
        // sd-bus's type letters: b a boolean (as an int), u a uint32, d a double.
        func read(_ path: String, _ interface: String, _ name: String, _ type: Unicode.Scalar,
                  _ value: UnsafeMutableRawPointer) -> Bool {
            bahost_bus_get_trivial(bus, Self.upower, path, interface, name, CChar(UInt8(ascii: type)), value) >= 0
        }
        let hasUPower = read("/org/freedesktop/UPower", Self.upower, "OnBattery", "b", &onBattery)
        let device = "\(Self.upower).Device"
        // Type 2 is a battery; a machine without one has a display device of another type, or not present.
        let hasBattery = read(Self.displayDevice, device, "IsPresent", "b", &present) && present != 0
            && read(Self.displayDevice, device, "Type", "u", &type) && type == 2
            && read(Self.displayDevice, device, "Percentage", "d", &percent)
        var profile: UnsafeMutablePointer<CChar>?
        var saver: Bool?
        for (service, path) in [
            (Self.powerProfiles, "/org/freedesktop/UPower/PowerProfiles"), (Self.oldPowerProfiles, "/net/hadess/PowerProfiles"),
        ] where saver == nil {
            if bahost_bus_get_string(bus, service, path, service, "ActiveProfile", &profile) >= 0, let profile {
                saver = String(cString: profile) == "power-saver"
                free(profile)
            }
        }
        let power = PowerState(
            onBattery: hasUPower ? onBattery != 0 : nil, batteryPercent: hasBattery ? percent : nil, powerSaver: saver)
        guard power != lastPower else { return }
        lastPower = power
        handlers.powerChanged(power)
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> SystemBusWatch {
        Unmanaged<SystemBusWatch>.fromOpaque(context!).takeUnretainedValue()
    }

    static let networkManager = "org.freedesktop.NetworkManager"
    static let networkManagerPath = "/org/freedesktop/NetworkManager"

    /// Reads NetworkManager's state and reports it when it changed; unknown when NetworkManager is not there.
    /// [watch thread]
    private func readNetworkManager() {
        func read(_ member: String) -> UInt32? {
            var value: UInt32 = 0
            let r = bahost_bus_get_trivial(
                bus, Self.networkManager, Self.networkManagerPath, Self.networkManager, member, CChar(UInt8(ascii: "u")),
                &value)
            return r >= 0 ? value : nil
        }
        let conditions = NetworkConditions(
            connectivity: read("Connectivity").flatMap(NetworkConditions.Connectivity.init(rawValue:)) ?? .unknown,
            metered: read("Metered").flatMap(NetworkConditions.Metered.init(rawValue:)) ?? .unknown)
        guard conditions != lastReported else { return }
        lastReported = conditions
        handlers.networkChanged(conditions)
    }

    /// [watch thread]
    private func prepareForSleep(_ goingToSleep: Bool) {
        if goingToSleep {
            handlers.sleep(true) { [self] in releaseInhibitor() }
        } else {
            takeInhibitor()
            handlers.sleep(false) {}
        }
    }

    /// Takes logind's delay inhibitor for sleep, unless one is held; without logind, nothing. [watch thread]
    private func takeInhibitor() {
        guard inhibitor.withLock({ $0 }) < 0 else { return }
        let fd = bahost_bus_inhibit(bus, "sleep", "bahost", "Saving partial downloads before sleep", "delay")
        if fd >= 0 { inhibitor.withLock { $0 = fd } }
    }

    /// [any thread]
    private func releaseInhibitor() {
        inhibitor.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    /// Whether a delay inhibitor is held now.
    public var holdsInhibitor: Bool { inhibitor.withLock { $0 >= 0 } }

    /// Ends the thread and closes the connection; returns once it has. [any thread but the watch's]
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt8 = 1
        _ = write(stopPipe.write, &one, 1)
        thread.withLock { $0 }?.join()
    }

    /// [watch thread]
    private func run() {
        while !stopped.load(ordering: .acquiring) {
            let r = sd_bus_process(bus, nil)
            if r > 0 { continue }
            if r < 0 {
                // The bus went away (dbus restarted): as without one, until the service restarts; nothing it said
                // holds a download any longer.
                if lastReported.map({ $0 != NetworkConditions() }) == true { handlers.networkChanged(NetworkConditions()) }
                if lastPower.map({ $0 != PowerState() }) == true { handlers.powerChanged(PowerState()) }
                break
            }
            if bahost_bus_wait(bus, stopPipe.read) < 0 { break }
        }
        closeBus()
        releaseInhibitor()
    }

    private func closeBus() {
        for slot in slots { sd_bus_slot_unref(slot) }
        slots = []
        if let bus { bahost_bus_close(bus) }
        bus = nil
    }
}

/// The system bus could not be used: what was tried, and sd-bus's error.
public struct SystemBusError: Error, Sendable, CustomStringConvertible {
    public var operation: String
    public var code: Int32

    public var description: String { "\(operation): \(String(cString: strerror(-code)))" }
}
