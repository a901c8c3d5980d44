import CSystemd
import Glibc

/// The service manager's side of the daemon (libsystemd's sd-daemon): the listening socket systemd passes to a
/// socket-activated service (`bahost.socket`), and the readiness it waits for (`Type=notify`). Without systemd (no
/// `LISTEN_FDS`, no `NOTIFY_SOCKET`) each is nothing, and the service binds its socket itself.
enum ServiceManager {
    /// The socket systemd passed for `path`, already bound and listening; nil when none was passed. A passed socket
    /// that is not a listening stream socket on `path` is refused, naming what it is.
    static func passedSocket(for path: String) throws -> Int32? {
        let count = sd_listen_fds(1)
        guard count > 0 else { return nil }
        let fd = SD_LISTEN_FDS_START
        guard count == 1, sd_is_socket_unix(fd, Int32(SOCK_STREAM.rawValue), 1, path, 0) > 0 else {
            throw ServiceError.system(
                "systemd passed \(count) socket\(count == 1 ? "" : "s"), not one listening on \(path) "
                    + "(bahost.socket's ListenStream must be the service's socket)", EINVAL)
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    /// Tells systemd the service is ready (it listens), or stopping; nothing without systemd.
    static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }
}
