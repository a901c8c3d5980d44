import CHostSupport
import Foundation
import ServiceWire
import Synchronization
import Vocabulary

/// The service's Unix socket: private to the user (a 0700 folder, a 0600 socket), and every connection's peer
/// checked with `SO_PEERCRED` before a byte is read from it.
final class ServiceListener: Sendable {
    let path: String
    private let descriptor: Int32
    /// Whether systemd passed the socket (`bahost.socket`): it then owns the socket's file, which stays.
    let activated: Bool
    private let stopped = Atomic<Bool>(false)

    /// Takes the socket systemd passed for `path` (socket activation); else binds `path`, replacing a socket that
    /// no service answers on, and refuses to start beside a live service.
    init(path: String) throws {
        self.path = path
        if let passed = try ServiceManager.passedSocket(for: path) {
            descriptor = passed
            activated = true
            return
        }
        activated = false
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if FileManager.default.fileExists(atPath: path) {
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

    /// Accepts connections on a thread of its own until `stop`; `accept` gets each one whose peer is this user.
    func start(_ handle: @escaping @Sendable (FramedSocket, _ pid: Int32) -> Void) {
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
                // An extension reaches the host through its runner, never here: a peer inside a window's PID
                // namespace is an extension posing as an app.
                guard bahost_same_pid_namespace(pid) != 0 else {
                    refuse("a process inside an extension's window may not connect to the service")
                    continue
                }
                handle(socket, pid)
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
