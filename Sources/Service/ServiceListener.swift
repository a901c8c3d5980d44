import CHostSupport
import Foundation
import ServiceWire
import Synchronization
import Vocabulary

/// The service's Unix socket: private to the user (a 0700 folder, a 0600 socket), and every connection's peer
/// checked with `SO_PEERCRED` before a byte is read from it, and identified when it runs inside a Flatpak
/// (`FlatpakPeer`). A Flatpak app's own socket (`openFlatpakSockets`) admits only processes inside that app's sandbox.
final class ServiceListener: Sendable {
    let path: String
    /// The only Flatpak app this socket admits (a socket in the app's `$XDG_RUNTIME_DIR/app/APP_ID`); nil: the
    /// service's own socket, for every process of the user.
    let flatpakApp: String?
    private let descriptor: Int32
    /// Whether systemd passed the socket (`bahost.socket`): it then owns the socket's file, which stays.
    let activated: Bool
    private let stopped = Atomic<Bool>(false)

    /// Takes the socket systemd passed for `path` (socket activation); else binds `path`, replacing a socket that
    /// no service answers on, and refuses to start beside a live service.
    init(path: String, flatpakApp: String? = nil) throws {
        self.path = path
        self.flatpakApp = flatpakApp
        if flatpakApp == nil, let passed = try ServiceManager.passedSocket(for: path) {
            descriptor = passed
            activated = true
            return
        }
        activated = false
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if flatpakApp != nil {
            // The app's own folder: whatever is there is the app's or a service's that died, never a live one's.
            unlink(path)
        } else if FileManager.default.fileExists(atPath: path) {
            if let live = try? FramedSocket.connect(to: path) {
                live.close()
                throw ServiceError.alreadyRunning(path)
            }
            unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ServiceError.system("socket", errno) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw ServiceError.system("the socket path \(path) is too long", ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        // Nobody else may connect between bind and chmod.
        let mask = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(mask)
        guard bound == 0, listen(fd, 64) == 0 else {
            let error = errno
            close(fd)
            throw ServiceError.system("bind \(path)", error)
        }
        descriptor = fd
    }

    /// Accepts connections on a thread of its own until `stop`; `handle` gets each one whose peer is this user, with
    /// the Flatpak app it runs as, proved (nil: a native process). `refused` hears why one was turned away.
    func start(
        runtimeDirectory: String?, refused: @escaping @Sendable (_ pid: Int32, String) -> Void = { _, _ in },
        _ handle: @escaping @Sendable (FramedSocket, _ pid: Int32, FlatpakInfo?) -> Void
    ) {
        Thread.detachNewThread { [self, descriptor] in
            bahost_name_thread("bahost-accept")
            while true {
                // Runners are spawned with only their own descriptors, so the moment before FD_CLOEXEC leaks nothing.
                let fd = Glibc.accept(descriptor, nil, nil)
                if fd < 0 {
                    if errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE {
                        if errno == EMFILE || errno == ENFILE { usleep(50_000) }
                        continue
                    }
                    return
                }
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                let acceptedAt = FlatpakPeer.bootTicks
                if self.stopped.load(ordering: .acquiring) {
                    close(fd)
                    return
                }
                var pid: pid_t = 0
                var uid: uid_t = 0
                let socket = FramedSocket(descriptor: fd)
                // Told why, then dropped, before anything it sent is read.
                func refuse(_ message: String) {
                    let refusal = ServiceMessage.reply(
                        id: 0, .failure(HostError(code: 55, domain: "BAErrorDomain", message: message)))
                    if let data = try? WireJSON.encode(refusal) { try? socket.send(data) }
                    socket.close()
                }
                guard bahost_peer_credentials(fd, &pid, &uid) == 0, uid == getuid() else {
                    refuse("the bahost service of user \(getuid()) does not accept connections from user \(uid)")
                    continue
                }
                var flatpak: FlatpakInfo?
                switch FlatpakPeer.identify(pid: pid, acceptedAt: acceptedAt, runtimeDirectory: runtimeDirectory) {
                case .refused(let why):
                    refused(pid, why)
                    refuse("a Flatpak's identity could not be proved: \(why)")
                    continue
                case .flatpak(let info):
                    flatpak = info
                case .native:
                    // An extension reaches the host through its runner, never here: a peer inside a window's PID
                    // namespace is an extension posing as an app. (A Flatpak has a PID namespace of its own.)
                    guard bahost_same_pid_namespace(pid) != 0 else {
                        refuse("a process inside an extension's window may not connect to the service")
                        continue
                    }
                }
                if let only = self.flatpakApp, flatpak?.appIdentifier != only {
                    let who = flatpak.map { "the Flatpak \($0.appIdentifier)" } ?? "a process outside any Flatpak"
                    refused(pid, "\(who) connected to \(only)'s socket")
                    refuse("this socket is the Flatpak \(only)'s: only a process inside its sandbox may use it")
                    continue
                }
                handle(socket, pid, flatpak)
            }
        }
    }

    /// Stops accepting and removes the socket file (one systemd passed stays: systemd listens on it again and starts
    /// the service at the next connection).
    func stop() {
        stopped.store(true, ordering: .releasing)
        // A passed socket is shared with systemd: shut down, it would stop listening for systemd too. The accept
        // thread then waits on it until the process exits.
        if !activated {
            shutdown(descriptor, Int32(SHUT_RDWR))
            unlink(path)
        }
    }
}

public enum ServiceError: Error, CustomStringConvertible {
    case alreadyRunning(String)
    case system(String, Int32)

    public var description: String {
        switch self {
        case .alreadyRunning(let path): "a bahost service is already running on \(path)"
        case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
        }
    }
}
