import Foundation
import Synchronization

/// Shows what bahost does where a person looks, through the interfaces Linux desktops implement, on the session bus:
/// a notification (`org.freedesktop.Notifications`: GNOME, KDE, dunst…), updated in place, with its progress as the
/// `value` hint they draw as a bar; and the app's icon in the dock (`com.canonical.Unity.LauncherEntry`: KDE's task
/// manager, Dash to Dock, Plank…) with the progress and the count of essential downloads left. Without a session bus,
/// or without a notification server, nothing is shown and nothing fails.
///
/// Its session bus's thread (`SessionBus`) makes every call; the methods here post to it and return at once.
public final class DesktopShell: Sendable {
    private let bus: SessionBus
    /// Per app, the notification now shown (its id, to replace or close it).
    private let shown = Mutex<[String: UInt32]>([:])
    /// What an action of a shown notification does, by notification id.
    private let actions = Mutex<[UInt32: @Sendable () -> Void]>([:])

    static let notifications = "org.freedesktop.Notifications"
    static let notificationsPath = "/org/freedesktop/Notifications"

    /// Connects to the session bus; nil without one.
    public static func connect() -> DesktopShell? {
        guard let bus = SessionBus.connect() else { return nil }
        let shell = DesktopShell(bus: bus)
        bus.perform { [shell] _ in shell.subscribe() }
        return shell
    }

    private init(bus: SessionBus) { self.bus = bus }

    /// [bus thread]
    private func subscribe() {
        bus.subscribe(
            "type='signal',interface='\(Self.notifications)',member='ActionInvoked',path='\(Self.notificationsPath)'"
        ) { [self] message in
            guard let (id, key) = readUInt32AndString(message), key == LaunchNotice.tryAgain || key == "retry",
                let action = actions.withLock({ $0.removeValue(forKey: id) })
            else { return }
            action()
        }
        bus.subscribe(
            "type='signal',interface='\(Self.notifications)',member='NotificationClosed',path='\(Self.notificationsPath)'"
        ) { [self] message in
            guard let id = readUInt32(message) else { return }
            actions.withLock { _ = $0.removeValue(forKey: id) }
            shown.withLock { shown in
                for (app, shownID) in shown where shownID == id { shown[app] = nil }
            }
        }
    }

    /// Shows, or updates in place, `app`'s waiting notice (`summary` says for what) and its progress on the app's
    /// icon. [any thread]
    public func showWaiting(
        _ app: DesktopEntry, _ progress: LaunchNotice.Progress, summary: String = "Downloading required content"
    ) {
        let notice = LaunchNotice.waiting(app, progress, summary: summary)
        bus.perform { [self] bus in
            let replacing = shown.withLock { $0[app.appIdentifier] } ?? 0
            if let id = notify(bus, app, notice, replacing: replacing) {
                shown.withLock { $0[app.appIdentifier] = id }
            }
            launcherEntry(bus, app, progress: progress.fraction, count: Int64(progress.left), visible: true)
        }
    }

    /// Closes `app`'s waiting notice and hides the progress on its icon: the app starts. [any thread]
    public func endWaiting(_ app: DesktopEntry) {
        bus.perform { [self] bus in
            if let id = shown.withLock({ $0.removeValue(forKey: app.appIdentifier) }) {
                if let call = BusMessage.call(
                    bus, Self.notifications, Self.notificationsPath, Self.notifications, "CloseNotification")
                {
                    call.uint32(id)
                    call.send(on: bus)
                }
            }
            launcherEntry(bus, app, progress: 1, count: 0, visible: false)
        }
    }

    /// Tells that an essential download of `app` failed, with a "Try again" action that calls `retry`. [any thread]
    public func showFailure(
        _ app: DesktopEntry, asset: String, domain: String, code: Int64, message: String,
        retry: @escaping @Sendable () -> Void
    ) {
        let notice = LaunchNotice.failed(app, asset: asset, domain: domain, code: code, message: message)
        bus.perform { [self] bus in
            if let id = notify(bus, app, notice, replacing: 0) { actions.withLock { $0[id] = retry } }
        }
    }

    /// Ends the session bus's thread. [any thread but the bus's]
    public func stop() { bus.stop() }

    /// `Notify`; the notification's id, nil without a server. [bus thread]
    private func notify(_ bus: OpaquePointer, _ app: DesktopEntry, _ notice: LaunchNotice, replacing: UInt32) -> UInt32? {
        guard let call = BusMessage.call(bus, Self.notifications, Self.notificationsPath, Self.notifications, "Notify")
        else { return nil }
        call.string(app.name)
        call.uint32(replacing)
        call.string(app.icon)
        call.string(notice.summary)
        call.string(notice.body)
        call.strings(notice.actions.flatMap { [$0.key, $0.label] })
        var hints: [(String, BusMessage.Variant)] = [
            ("desktop-entry", .string(app.appIdentifier)), ("urgency", .byte(notice.urgency)),
            ("category", .string(notice.percent == nil ? "transfer.error" : "transfer")),
        ]
        if let percent = notice.percent { hints.append(("value", .int32(percent))) }
        call.dictionary(hints)
        // A waiting notice stays until the app starts; a failure until the person dismisses it.
        call.int32(0)
        return call.callForUInt32(on: bus)
    }

    /// The `Update` signal of the app's launcher entry. [bus thread]
    private func launcherEntry(_ bus: OpaquePointer, _ app: DesktopEntry, progress: Double, count: Int64, visible: Bool) {
        guard let signal = BusMessage.signal(
            bus, "/com/canonical/unity/launcherentry/\(Self.pathComponent(app.appIdentifier))",
            "com.canonical.Unity.LauncherEntry", "Update")
        else { return }
        signal.string(app.applicationURI)
        signal.dictionary([
            ("progress", .double(progress)), ("progress-visible", .bool(visible)),
            ("count", .int64(count)), ("count-visible", .bool(visible && count > 0)),
        ])
        signal.send(on: bus)
    }

    /// An object path element for an app identifier (letters, digits and `_` only): its FNV-1a hash.
    static func pathComponent(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash)
    }
}
