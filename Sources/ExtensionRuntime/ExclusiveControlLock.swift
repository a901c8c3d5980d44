import Foundation
import HostVocabulary
import Vocabulary

/// Apple's exclusive control between an app and its extension: an advisory `flock` on a file both can reach, so
/// it holds between any two processes of the same user and is released by the kernel if the holder dies.
public final class ExclusiveControlLock {
    public let path: String
    private var descriptor: Int32 = -1

    public init(path: String) {
        self.path = path
    }

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// The lock file of an app: `$XDG_RUNTIME_DIR/bahost/APP.lock`, or a per-user folder under /tmp; a sandboxed
    /// app's is in its own folder (`sandboxHome`), where its sandbox sees it at the same path.
    public static func path(forApp appIdentifier: String, sandboxHome: String? = nil) -> String {
        if let sandboxHome { return "\(SandboxHomes.bahostFolder(in: sandboxHome))/\(appIdentifier).lock" }
        return "\(folder)/\(appIdentifier).lock"
    }

    /// Read once: the environment does not change under a running process, and reading it is not cheap.
    private static let folder = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"].map { "\($0)/bahost" }
        ?? "/tmp/bahost-\(getuid())"

    /// Takes the lock if it is free; false when another process (or another descriptor) holds it.
    public func tryAcquire() -> Result<Bool, HostError> {
        if descriptor < 0 {
            try? FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                return .failure(HostError(
                    code: Int64(errno), domain: "NSPOSIXErrorDomain",
                    message: "cannot open the exclusive-control lock \(path): \(String(cString: strerror(errno)))"))
            }
        }
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return .success(true) }
        if errno == EWOULDBLOCK { return .success(false) }
        return .failure(HostError(
            code: Int64(errno), domain: "NSPOSIXErrorDomain", message: String(cString: strerror(errno))))
    }

    public func release() {
        if descriptor >= 0 { flock(descriptor, LOCK_UN) }
    }
}
