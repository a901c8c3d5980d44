import CBAExtension
import ExtensionRuntime
import Foundation
import HostVocabulary
import ServiceWire
import Vocabulary

/// Flatpak apps, as the service serves them: each installed one gets a socket of its own in its
/// `$XDG_RUNTIME_DIR/app/APP_ID` (which Flatpak shows that app's sandbox and no other, with no permission asked), and
/// a connection from inside a Flatpak is the app its sandbox proves (`FlatpakPeer`), never the one it claims.
extension BackgroundAssetsService {
    /// [the declared-apps task, and `run` at start] Opens the socket of each installed Flatpak app that has none, and
    /// closes those of apps no longer installed.
    func openFlatpakSockets() {
        let apps = Set(((try? engine.installedApps()) ?? []).filter { $0.sandboxHome != nil }.map(\.appIdentifier))
        guard let runtime = settings.runtimeDirectory else {
            if !apps.isEmpty { logger.error("flatpak: no XDG_RUNTIME_DIR: Flatpak apps cannot reach the service") }
            return
        }
        let (toOpen, toClose) = flatpakListeners.withLock { open in
            (apps.subtracting(open.keys), open.filter { !apps.contains($0.key) })
        }
        for (app, listener) in toClose {
            listener.stop()
            flatpakListeners.withLock { $0[app] = nil }
            logger.info("flatpak: closed \(app)'s socket")
        }
        for app in toOpen.sorted() {
            let path = "\(runtime)/app/\(app)/\(ServiceProtocol.flatpakSocketName)"
            do {
                let listener = try ServiceListener(path: path, flatpakApp: app)
                flatpakListeners.withLock { $0[app] = listener }
                start(listener)
                logger.info("flatpak: listening for \(app) on \(path)")
            } catch {
                logger.error("flatpak: cannot open \(app)'s socket \(path): \(error)")
            }
        }
    }

    /// [`run`, as the service stops] Closes every Flatpak app's socket.
    func closeFlatpakSockets() {
        let listeners = flatpakListeners.withLock { open in
            defer { open = [:] }
            return Array(open.values)
        }
        listeners.forEach { $0.stop() }
    }

    /// [a connection's task] The hello of a process inside a Flatpak: it is the app its sandbox proves, and only
    /// that app, installed from that Flatpak; no `bahost launch` is needed, and the command line's requests are not
    /// a sandbox's to make. Its first connection counts as the app's launch.
    func introduce(_ session: ClientSession, _ hello: Hello, fromFlatpak flatpak: FlatpakInfo) -> ServiceReply {
        let own = flatpak.appIdentifier
        func refuse(_ message: String) -> ServiceReply {
            logger.notice("refused a Flatpak: \(message)", metadata: ["flatpak": "\(own)", "pid": "\(session.peerPID)"])
            return .failure(HostError(BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED, message))
        }
        guard hello.role == .app else {
            return refuse("a process inside the Flatpak \(own) may connect only as that app, not as the command line")
        }
        let claimed = hello.appIdentifier ?? own
        guard claimed == own else {
            return refuse(
                "a Flatpak acts only as itself: the sandbox proves this process is \(own), and it claimed "
                    + "'\(claimed.printable(limit: 200))'")
        }
        guard let app = try? engine.app(own), let home = app.sandboxHome else {
            return refuse("no app \(own) is installed from its Flatpak (files/share/bahost/\(own) in its deployment)")
        }
        if (try? engine.isLaunchedProcess(session.peerPID, of: own)) != true {
            let now = clock.now
            try? engine.launched(own, at: now, process: ProcessStamp(pid: session.peerPID)) { launches in
                settings.periodic.next(after: now, launches: launches)
            }
        }
        var named = hello
        named.appIdentifier = own
        session.introduce(named)
        logger.info("app connected", metadata: [
            "app": "\(own)", "pid": "\(session.peerPID)", "flatpak": "\(flatpak.instance ?? "")",
        ])
        return .hello(HelloReply(
            serviceVersion: Self.version,
            exclusiveControlLockPath: ExclusiveControlLock.path(forApp: own, sandboxHome: home),
            appGroupIdentifier: app.appGroupIdentifier,
            containerPath: settings.dataRoot.container(for: app.appGroupIdentifier).path))
    }
}
