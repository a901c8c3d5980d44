import CHostSupport
import Foundation
import Synchronization

/// Tells the service that something changed in folders it follows, with inotify: the declared-apps folders (each
/// root that exists and each app folder in it), the person's settings folder. For a root not there yet (no package
/// declared an app so far, no settings written), its deepest folder that is, so that its creation is seen. A thread
/// of the watcher's own waits on the inotify descriptor (`poll`, no timeout), reads what it reports and fires
/// `changed`: the service waits on that, so nothing polls.
///
/// Thread rule: one owner (the service's task that follows the folders) calls `arm` and `takeChange`; the watcher's
/// thread only reads the descriptor and fires. It ends when the watcher does, and closes the descriptors then.
final class FolderWatcher: Sendable {
    /// What the thread reports, shared with it (the thread must not hold the watcher, whose end is its cue).
    private final class Changes: Sendable {
        let signal = Signal()
        let seen = Atomic(false)
    }

    private let changes = Changes()
    private let inotify: Int32
    /// A pipe whose write end `deinit` closes: the thread's cue to end.
    private let stop: (read: Int32, write: Int32)
    /// The watches `arm` added, by path.
    private let watches = Mutex<[String: Int32]>([:])

    /// Fired after each batch of changes the descriptor reported.
    var changed: Signal { changes.signal }

    /// - Parameter threadName: what the OS shows for its thread (`bahost-apps-dir`, `bahost-settings`).
    init(threadName: String = "bahost-apps-dir") {
        inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) != 0 { ends = [-1, -1] }
        for end in ends where end >= 0 { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        stop = (ends[0], ends[1])
        guard inotify >= 0, ends[0] >= 0 else { return }
        let (inotify, stop, changes) = (inotify, ends[0], changes)
        let thread = Thread {
            bahost_name_thread(threadName)
            Self.follow(inotify: inotify, stop: stop) {
                changes.seen.store(true, ordering: .releasing)
                changes.signal.fire()
            }
        }
        thread.start()
    }

    deinit {
        if inotify >= 0 && stop.read >= 0 {
            close(stop.write)  // the thread sees the end of the pipe, ends, and closes the rest
        } else {
            for descriptor in [inotify, stop.read, stop.write] where descriptor >= 0 { close(descriptor) }
        }
    }

    /// [owner] Watches `roots` and `folders` afresh. A change after this call is seen by `takeChange`; what changed
    /// before it is seen by the scan that follows it.
    /// - Parameter afterLooking: runs once the roots' deepest folders are found, before they are watched (what a
    ///   package manager may do in between, for the tests).
    func arm(roots: [String], folders: [String], afterLooking: () -> Void = {}) {
        guard inotify >= 0 else { return }
        let changes = UInt32(
            IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF
                | IN_MOVE_SELF)
        // A root's next folder made between finding its deepest folder and watching that is reported to no watch:
        // looked for again until the deepest folders stand (a package manager makes a whole path at once).
        var deepest = roots.map(Self.deepestExisting)
        afterLooking()
        for _ in 0..<Self.maximumArmRounds {
            let wanted = Set(deepest + folders)
            watches.withLock { watches in
                // Only what is no longer wanted is removed: a removal reports `IN_IGNORED`, which is no change.
                for (path, watch) in watches where !wanted.contains(path) {
                    inotify_rm_watch(inotify, watch)
                    watches[path] = nil
                }
                for path in wanted {
                    let watch = inotify_add_watch(inotify, path, changes)
                    watches[path] = watch >= 0 ? watch : nil
                }
            }
            let now = roots.map(Self.deepestExisting)
            if now == deepest { return }
            deepest = now
            changesSeen()
        }
    }

    /// How many times `arm` looks again for roots being made while it watches them: more than a path has folders.
    static let maximumArmRounds = 64

    /// A change `arm` found by looking: reported as one inotify reported is.
    private func changesSeen() {
        changes.seen.store(true, ordering: .releasing)
        changes.signal.fire()
    }

    /// [owner] Whether anything changed since the last call.
    func takeChange() -> Bool { changes.seen.exchange(false, ordering: .acquiringAndReleasing) }

    /// [the watcher's thread] Waits on `inotify` until `stop` ends; reads each batch of events and reports it.
    private static func follow(inotify: Int32, stop: Int32, report: () -> Void) {
        defer {
            close(inotify)
            close(stop)
        }
        var descriptors = [
            pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
        ]
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            guard poll(&descriptors, 2, -1) >= 0 else {
                if errno == EINTR { continue }
                return
            }
            if descriptors[1].revents != 0 { return }
            guard descriptors[0].revents != 0 else { continue }
            var changed = false
            while true {
                let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                changed = changed || Self.holdsAChange(buffer[..<count])
            }
            if changed { report() }
        }
    }

    /// Whether a batch of `inotify_event`s holds anything but `IN_IGNORED` (a watch `arm` removed, or one whose folder
    /// went, which its `IN_DELETE_SELF` reported already).
    static func holdsAChange(_ events: ArraySlice<UInt8>) -> Bool {
        let header = MemoryLayout<inotify_event>.size
        var offset = events.startIndex
        while offset + header <= events.endIndex {
            let (mask, length) = events[offset..<offset + header].withUnsafeBytes {
                ($0.loadUnaligned(fromByteOffset: 4, as: UInt32.self), $0.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
            }
            if mask & UInt32(IN_IGNORED) == 0 { return true }
            offset += header + Int(length)
        }
        return false
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
