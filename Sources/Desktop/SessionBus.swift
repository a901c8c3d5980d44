import CHostSupport
import CSystemd
import Foundation
import Glibc
import HostVocabulary
import Synchronization

/// The user's session bus, through libsystemd's sd-bus (`$DBUS_SESSION_BUS_ADDRESS`): where the desktop's
/// notification server and dock listen. One thread, which this object owns, holds the connection: every call is
/// posted to it (`perform`), and it runs the signal handlers.
final class SessionBus: @unchecked Sendable {  // safe: `bus` and `handlers` are touched on the bus thread only
    private var bus: OpaquePointer?
    private let jobs = Mutex<[@Sendable (OpaquePointer) -> Void]>([])
    private let wakePipe: (read: Int32, write: Int32)
    private let stopped = Atomic<Bool>(false)
    private let stopRequested = Atomic<Bool>(false)
    private let thread = Mutex<OwnedThread?>(nil)
    private var slots: [OpaquePointer?] = []
    /// Signal handlers by match rule, called on the bus thread with the message.
    private var handlers: [ObjectIdentifier: (OpaquePointer) -> Void] = [:]

    /// Connects and starts the thread; nil without a session bus.
    static func connect() -> SessionBus? {
        var bus: OpaquePointer?
        guard sd_bus_open_user(&bus) >= 0, let bus else { return nil }
        let connection = SessionBus(bus: bus)
        guard let thread = OwnedThread(name: "bahost-user-bus", { connection.run() }) else {
            connection.closeBus()
            return nil
        }
        connection.thread.withLock { $0 = thread }
        return connection
    }

    deinit {
        close(wakePipe.read)
        close(wakePipe.write)
    }

    private init(bus: OpaquePointer) {
        self.bus = bus
        var ends: [Int32] = [-1, -1]
        _ = bahost_wake_pipe(&ends)
        wakePipe = (ends[0], ends[1])
    }

    /// Runs `job` on the bus thread with the connection. [any thread]
    func perform(_ job: @escaping @Sendable (OpaquePointer) -> Void) {
        guard !stopped.load(ordering: .acquiring) else { return }
        jobs.withLock { $0.append(job) }
        var one: UInt8 = 1
        _ = write(wakePipe.write, &one, 1)
    }

    /// Calls `handler` with each signal that `rule` matches (sd-bus match syntax). [bus thread]
    func subscribe(_ rule: String, _ handler: @escaping (OpaquePointer) -> Void) {
        final class Box {
            let handler: (OpaquePointer) -> Void
            init(_ handler: @escaping (OpaquePointer) -> Void) { self.handler = handler }
        }
        let box = Box(handler)
        var slot: OpaquePointer?
        let context = Unmanaged.passRetained(box).toOpaque()
        let r = sd_bus_add_match(bus, &slot, rule, { message, context, _ in
            guard let message, let context else { return 0 }
            Unmanaged<Box>.fromOpaque(context).takeUnretainedValue().handler(message)
            return 0
        }, context)
        if r >= 0 { slots.append(slot) } else { Unmanaged<Box>.fromOpaque(context).release() }
    }

    /// Ends the thread and closes the connection, once the jobs posted before have run. [any thread but the bus's]
    func stop() {
        guard !stopRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        stopped.store(true, ordering: .releasing)
        var one: UInt8 = 1
        _ = write(wakePipe.write, &one, 1)
        thread.withLock { $0 }?.join()
    }

    /// [bus thread]
    private func run() {
        var broken = false
        while !broken {
            for job in jobs.withLock({ jobs in defer { jobs = [] }; return jobs }) { job(bus!) }
            if stopped.load(ordering: .acquiring) { break }
            let r = sd_bus_process(bus, nil)
            if r > 0 { continue }
            if r < 0 { broken = true; break }
            if bahost_bus_wait(bus, wakePipe.read) < 0 { broken = true }
        }
        if broken { stopped.store(true, ordering: .releasing) }
        closeBus()
    }

    /// [bus thread, or the caller of `connect` before the thread exists]
    private func closeBus() {
        for slot in slots { sd_bus_slot_unref(slot) }
        slots = []
        if let bus { bahost_bus_close(bus) }
        bus = nil
    }
}

/// A D-Bus method call or signal built argument by argument (sd-bus's message API, which Swift can call: its
/// variadic forms it cannot).
struct BusMessage: ~Copyable {
    let message: OpaquePointer

    static func call(_ bus: OpaquePointer, _ destination: String, _ path: String, _ interface: String, _ member: String)
        -> BusMessage?
    {
        var message: OpaquePointer?
        guard sd_bus_message_new_method_call(bus, &message, destination, path, interface, member) >= 0, let message
        else { return nil }
        return BusMessage(message: message)
    }

    static func signal(_ bus: OpaquePointer, _ path: String, _ interface: String, _ member: String) -> BusMessage? {
        var message: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &message, path, interface, member) >= 0, let message else { return nil }
        return BusMessage(message: message)
    }

    private init(message: OpaquePointer) { self.message = message }
    deinit { sd_bus_message_unref(message) }

    func string(_ value: String) { _ = value.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) } }
    func objectPath(_ value: String) {
        _ = value.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "o")), $0) }
    }
    func uint32(_ value: UInt32) { withUnsafePointer(to: value) { _ = sd_bus_message_append_basic(message, CChar(UInt8(ascii: "u")), $0) } }
    func int32(_ value: Int32) { withUnsafePointer(to: value) { _ = sd_bus_message_append_basic(message, CChar(UInt8(ascii: "i")), $0) } }

    /// `as`
    func strings(_ values: [String]) {
        _ = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "s")
        for value in values { string(value) }
        _ = sd_bus_message_close_container(message)
    }

    /// `a{sv}`: each value a `Variant`.
    func dictionary(_ entries: [(String, Variant)]) {
        _ = sd_bus_message_open_container(message, CChar(UInt8(ascii: "a")), "{sv}")
        for (key, value) in entries {
            _ = sd_bus_message_open_container(message, CChar(UInt8(ascii: "e")), "sv")
            string(key)
            _ = sd_bus_message_open_container(message, CChar(UInt8(ascii: "v")), value.signature)
            switch value {
            case .string(let text): string(text)
            case .int32(let number): int32(number)
            case .int64(let number):
                withUnsafePointer(to: number) { _ = sd_bus_message_append_basic(message, CChar(UInt8(ascii: "x")), $0) }
            case .byte(let number):
                withUnsafePointer(to: number) { _ = sd_bus_message_append_basic(message, CChar(UInt8(ascii: "y")), $0) }
            case .double(let number):
                withUnsafePointer(to: number) { _ = sd_bus_message_append_basic(message, CChar(UInt8(ascii: "d")), $0) }
            case .bool(let flag):
                let value: Int32 = flag ? 1 : 0
                withUnsafePointer(to: value) { _ = sd_bus_message_append_basic(message, CChar(UInt8(ascii: "b")), $0) }
            }
            _ = sd_bus_message_close_container(message)
            _ = sd_bus_message_close_container(message)
        }
        _ = sd_bus_message_close_container(message)
    }

    enum Variant {
        case string(String), int32(Int32), int64(Int64), byte(UInt8), double(Double), bool(Bool)

        var signature: String {
            switch self {
            case .string: "s"
            case .int32: "i"
            case .int64: "x"
            case .byte: "y"
            case .double: "d"
            case .bool: "b"
            }
        }
    }

    /// Sends a call and reads a `u` answer (a notification's id); nil when it failed or timed out (1 s).
    func callForUInt32(on bus: OpaquePointer) -> UInt32? {
        var reply: OpaquePointer?
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        guard sd_bus_call(bus, message, 1_000_000, &error, &reply) >= 0, let reply else { return nil }
        defer { sd_bus_message_unref(reply) }
        var value: UInt32 = 0
        return sd_bus_message_read_basic(reply, CChar(UInt8(ascii: "u")), &value) >= 0 ? value : nil
    }

    /// Sends a call or a signal without waiting for an answer.
    func send(on bus: OpaquePointer) {
        _ = sd_bus_send(bus, message, nil)
    }
}

/// Reads a signal's first arguments: a `u` then an `s` (the notification server's `ActionInvoked(id, key)`).
func readUInt32AndString(_ message: OpaquePointer) -> (UInt32, String)? {
    var id: UInt32 = 0
    var text: UnsafePointer<CChar>?
    guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "u")), &id) >= 0,
        sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &text) >= 0, let text
    else { return nil }
    return (id, String(cString: text))
}

/// Reads a signal's first argument, a `u` (`NotificationClosed(id, reason)`).
func readUInt32(_ message: OpaquePointer) -> UInt32? {
    var id: UInt32 = 0
    return sd_bus_message_read_basic(message, CChar(UInt8(ascii: "u")), &id) >= 0 ? id : nil
}
