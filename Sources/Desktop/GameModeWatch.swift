import CSystemd
import Foundation
import Synchronization

/// Whether a game runs, as Feral's GameMode says on the session bus: `com.feralinteractive.GameMode`'s
/// `ClientCount`, the games that asked it to optimise the machine (Steam's and Lutris's launchers, or a game
/// itself, through `gamemoderun`). Read at start, then at each `PropertiesChanged` and each time GameMode appears or
/// leaves; without it, nil (nothing is known, and nothing is held for it).
///
/// Its connection is its own `SessionBus` (one thread, which this object owns); `changed` is called on that thread
/// and must not block.
public final class GameModeWatch: Sendable {
    private let bus: SessionBus

    static let service = "com.feralinteractive.GameMode"
    static let path = "/com/feralinteractive/GameMode"

    /// Starts following GameMode; nil without a session bus.
    public static func start(changed: @escaping @Sendable (_ clients: Int?) -> Void) -> GameModeWatch? {
        guard let bus = SessionBus.connect() else { return nil }
        let watch = GameModeWatch(bus: bus)
        bus.perform { connection in
            let last = Mutex<Int??>(.none)
            let read: () -> Void = {
                var count: Int32 = 0
                let clients = bahost_bus_get_trivial(connection, service, path, service, "ClientCount", CChar(UInt8(ascii: "i")), &count) >= 0
                    ? Int(count) : nil
                let isNew = last.withLock { last in
                    defer { last = .some(clients) }
                    return last != .some(clients)
                }
                if isNew { changed(clients) }
            }
            bus.subscribe(
                "type='signal',sender='\(service)',path='\(path)',interface='org.freedesktop.DBus.Properties',"
                    + "member='PropertiesChanged'") { _ in read() }
            bus.subscribe(
                "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                    + "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(service)'") { _ in read() }
            read()
        }
        return watch
    }

    private init(bus: SessionBus) { self.bus = bus }

    /// Ends the watch and its connection. [any thread but the watch's]
    public func stop() { bus.stop() }
}
