import Foundation

/// Tells the service that something changed in the declared-apps folders, with inotify: each root that exists and
/// each app folder in it, and for a root not there yet (no package declared an app so far), its deepest folder
/// that is, so that its creation is seen. The service reads it without blocking, every quarter of a second.
///
/// Thread rule: one owner (the service's declared-apps task).
final class DeclaredAppWatcher {
    private var descriptor: Int32 = -1

    deinit { if descriptor >= 0 { close(descriptor) } }

    /// Watches `roots` and `folders` afresh. A change after this call is seen by `drain`; what changed before it
    /// is seen by the scan that follows it.
    func arm(roots: [String], folders: [String]) {
        if descriptor >= 0 { close(descriptor) }
        descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return }
        let changes = UInt32(
            IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF
                | IN_MOVE_SELF)
        for path in Set(roots.map(Self.deepestExisting) + folders) {
            _ = inotify_add_watch(descriptor, path, changes)
        }
    }

    /// Reads every waiting event; true when there was any.
    func drain() -> Bool {
        guard descriptor >= 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var any = false
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 { any = true }
        return any
    }

    /// `path`, or its nearest ancestor that exists.
    static func deepestExisting(_ path: String) -> String {
        var current = path
        while !current.isEmpty && current != "/" && access(current, F_OK) != 0 {
            current = (current as NSString).deletingLastPathComponent
        }
        return current.isEmpty ? "/" : current
    }
}
