import CHostSupport
import Foundation
import Synchronization
import Vocabulary

/// The cgroup a window's processes live in, so that its memory and process limits hold for the window as a whole:
/// whatever the extension forks is counted with it, and the kernel stops the window at a ceiling the host's sampling
/// cannot outrun.
///
/// Where the machine offers one (probed once, `WindowCgroup.support`):
/// - cgroup v2, under the host's own cgroup when it is delegated to it (systemd's `Delegate=yes` in the service's
///   unit): the host moves itself into a leaf (`host`), enables the memory and pids controllers for its subtree, and
///   makes one child a window (`memory.max`, `memory.swap.max` 0, `pids.max`; `cgroup.kill` at the end);
/// - cgroup v1, a child of the host's own cgroup in the `memory` and the `pids` hierarchies, where it may write
///   there (root in a container, say): `memory.limit_in_bytes` (and `memsw`, so swap is no way out), `pids.max`.
/// Elsewhere there is none, and the window's processes are found in its PID namespace (`WindowProcesses`).
///
/// The host kills a window whose processes' resident memory, summed, passes the limit (sampled every few
/// milliseconds); the cgroup's ceiling is that limit plus an eighth (8 MiB at least), so that a window allocating
/// faster than the sampling sees is stopped by the kernel a little past its limit, never far past it.
final class WindowCgroup {
    /// What this machine lets bahost do, probed once per process.
    enum Support: Sendable {
        case v2(parent: String)
        case v1(memoryParent: String, pidsParent: String)
        case none(reason: String)
    }

    static let support: Support = probe()

    /// One folder per hierarchy: one for v2, the memory one then the pids one for v1.
    let folders: [String]
    private let version: Int
    let ceilingBytes: Int64

    /// The window's processes may be at most this many tasks (threads count: the kernel's pids controller counts
    /// them), as the runner's own process limit says.
    static let maximumTasks = 64

    /// Makes the window's cgroup; nil where the machine offers none, or making it failed (the window then runs
    /// without one, and its report says so).
    init?(limitBytes: Int64) {
        let headroom = max(limitBytes / 8, 8 << 20)
        ceilingBytes = limitBytes > Int64.max - headroom ? Int64.max : limitBytes + headroom
        let name = "bahost-window-\(getpid())-\(Self.counter.add(1, ordering: .relaxed).newValue)"
        switch Self.support {
        case .none:
            return nil
        case .v2(let parent):
            let folder = "\(parent)/\(name)"
            guard mkdir(folder, 0o755) == 0 else { return nil }
            folders = [folder]
            version = 2
            let written = Self.write("\(ceilingBytes)", to: "\(folder)/memory.max")
                && Self.write("\(Self.maximumTasks)", to: "\(folder)/pids.max")
            _ = Self.write("0", to: "\(folder)/memory.swap.max")  // absent without swap accounting
            guard written else {
                rmdir(folder)
                return nil
            }
        case .v1(let memoryParent, let pidsParent):
            let memory = "\(memoryParent)/\(name)", pids = "\(pidsParent)/\(name)"
            guard mkdir(memory, 0o755) == 0 else { return nil }
            guard mkdir(pids, 0o755) == 0 else {
                rmdir(memory)
                return nil
            }
            folders = [memory, pids]
            version = 1
            let written = Self.write("\(ceilingBytes)", to: "\(memory)/memory.limit_in_bytes")
                && Self.write("\(Self.maximumTasks)", to: "\(pids)/pids.max")
            // After the memory limit, which it may not be below; absent without swap accounting.
            _ = Self.write("\(ceilingBytes)", to: "\(memory)/memory.memsw.limit_in_bytes")
            guard written else {
                folders.forEach { rmdir($0) }
                return nil
            }
        }
    }

    /// The files the runner writes "0" to, before it runs, to join the window's cgroups itself: v1's `tasks` (a
    /// single thread that moves itself skips the threadgroup lock, whose write side costs an RCU grace period when
    /// the host moves the child), v2's `cgroup.procs`.
    var joinFiles: [String] { folders.map { version == 1 ? "\($0)/tasks" : "\($0)/cgroup.procs" } }

    /// Every process in the window, by the pid this host sees.
    func members() -> [pid_t] {
        guard let text = try? String(contentsOfFile: "\(folders[0])/cgroup.procs", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { pid_t($0) }
    }

    /// How many times the kernel killed a process of the window for memory.
    var memoryKills: Int {
        let file = version == 2 ? "\(folders[0])/memory.events" : "\(folders[0])/memory.oom_control"
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return 0 }
        let line = text.split(separator: "\n").first { $0.hasPrefix("oom_kill ") }
        return line.flatMap { Int($0.dropFirst(9)) } ?? 0
    }

    /// The most memory the window's cgroup was charged at once (its page cache included), where the kernel says.
    var peakBytes: Int64? {
        let file = version == 2 ? "\(folders[0])/memory.peak" : "\(folders[0])/memory.max_usage_in_bytes"
        return (try? String(contentsOfFile: file, encoding: .utf8)).flatMap {
            Int64($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// Kills every process left in the window and removes its folders once it is empty: a killed process holds its
    /// cgroup until the kernel has reaped it, which the waits below see happen (v2's `cgroup.events` says
    /// `populated 0`; v1's members' pidfds poll readable) rather than looking again after a sleep. Bounded by
    /// `emptyingLimit`; a folder that is still busy then is pruned by the next window.
    func remove() {
        let deadline = ContinuousClock.now + Self.emptyingLimit
        if version == 2 {
            let events = open("\(folders[0])/cgroup.events", O_RDONLY | O_CLOEXEC)
            defer { if events >= 0 { close(events) } }
            if !Self.write("1", to: "\(folders[0])/cgroup.kill") {
                for pid in members() { kill(pid, SIGKILL) }
            }
            // The kernel notifies a change of `cgroup.events` as POLLPRI on an open descriptor of it.
            while events >= 0 && Self.populated(events) && ContinuousClock.now < deadline {
                var fd = pollfd(fd: events, events: Int16(POLLPRI), revents: 0)
                _ = bahost_poll(&fd, 1, max(0, (deadline - ContinuousClock.now).inNanoseconds))
            }
        } else {
            let exits = members().map { pid in (pid, bahost_pidfd_open(pid)) }
            for (pid, _) in exits { kill(pid, SIGKILL) }
            var waiting = exits.compactMap { $0.1 >= 0 ? pollfd(fd: $0.1, events: Int16(POLLIN), revents: 0) : nil }
            defer { waiting.forEach { close($0.fd) } }
            while waiting.contains(where: { $0.revents == 0 }) && ContinuousClock.now < deadline {
                _ = bahost_poll(&waiting, nfds_t(waiting.count), max(0, (deadline - ContinuousClock.now).inNanoseconds))
            }
        }
        folders.forEach { rmdir($0) }
    }

    /// How long `remove` waits for the window's killed processes to be reaped.
    static let emptyingLimit = Duration.milliseconds(100)

    /// Whether `cgroup.events` (open at `descriptor`) says processes are still in the cgroup.
    private static func populated(_ descriptor: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return false }
        return String(decoding: buffer[..<count], as: UTF8.self).contains("populated 1")
    }

    /// What each window gets on this machine, in a sentence.
    static var summary: String {
        switch support {
        case .v2(let parent):
            "cgroup v2 under \(parent): memory.max, pids.max and cgroup.kill for the window as a whole"
        case .v1(let memory, _):
            "cgroup v1 (memory, pids) under \(memory): the window's processes limited as a whole"
        case .none(let reason):
            "no cgroup (\(reason)): the window's processes measured together in its PID namespace, no kernel ceiling"
        }
    }

    // MARK: Probing

    private static func probe() -> Support {
        if ProcessInfo.processInfo.environment["BAHOST_CGROUPS"] == "off" { return .none(reason: "BAHOST_CGROUPS=off") }
        let mounts = cgroupMounts()
        let own = ownCgroups()
        if let mount = mounts.v2, let path = own["0"], let parent = delegatedV2(mount + normalized(path)) {
            pruneStale(in: [parent])
            return .v2(parent: parent)
        }
        if let memoryMount = mounts.v1["memory"], let pidsMount = mounts.v1["pids"],
            let memoryPath = own["memory"], let pidsPath = own["pids"]
        {
            let memory = memoryMount + normalized(memoryPath), pids = pidsMount + normalized(pidsPath)
            if access(memory, W_OK) == 0 && access(pids, W_OK) == 0 {
                pruneStale(in: [memory, pids])
                return .v1(memoryParent: memory, pidsParent: pids)
            }
            return .none(reason: "the cgroup v1 memory and pids hierarchies are not writable by this user")
        }
        if mounts.v2 != nil {
            return .none(reason: "cgroup v2 is not delegated to bahost (Delegate=yes in its systemd unit)")
        }
        return .none(reason: "this machine mounts no cgroup memory and pids controllers")
    }

    /// The host's own cgroup in v2, made a parent of windows: it must be writable and offer the memory and pids
    /// controllers, and a cgroup with processes cannot enable controllers for children, so the host first moves
    /// itself into a leaf of its own. Nil when any step is refused.
    private static func delegatedV2(_ folder: String) -> String? {
        guard access("\(folder)/cgroup.subtree_control", W_OK) == 0,
            let controllers = try? String(contentsOfFile: "\(folder)/cgroup.controllers", encoding: .utf8),
            Set(controllers.split(whereSeparator: \.isWhitespace)).isSuperset(of: ["memory", "pids"])
        else { return nil }
        let enabled = (try? String(contentsOfFile: "\(folder)/cgroup.subtree_control", encoding: .utf8)) ?? ""
        let words = enabled.split(whereSeparator: \.isWhitespace)
        if words.contains("memory") && words.contains("pids") { return folder }
        let leaf = "\(folder)/host"
        guard mkdir(leaf, 0o755) == 0 || errno == EEXIST, write("\(getpid())", to: "\(leaf)/cgroup.procs"),
            write("+memory +pids", to: "\(folder)/cgroup.subtree_control")
        else { return nil }
        return folder
    }

    /// v2's mount point, and each v1 controller's, from mountinfo.
    private static func cgroupMounts() -> (v2: String?, v1: [String: String]) {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return (nil, [:]) }
        var v2: String?
        var v1: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2 else { continue }
            let fields = halves[0].split(separator: " "), tail = halves[1].split(separator: " ")
            guard fields.count >= 5, tail.count >= 3 else { continue }
            let mountPoint = String(fields[4])
            if tail[0] == "cgroup2" {
                v2 = v2 ?? mountPoint
            } else if tail[0] == "cgroup" {
                for option in tail[2].split(separator: ",") where option == "memory" || option == "pids" {
                    v1[String(option)] = mountPoint
                }
            }
        }
        return (v2, v1)
    }

    /// This process's cgroup in each hierarchy, by controller ("0" for v2), from /proc/self/cgroup.
    private static func ownCgroups() -> [String: String] {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else { return [:] }
        var own: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            if parts[0] == "0" && parts[1].isEmpty { own["0"] = String(parts[2]) }
            for controller in parts[1].split(separator: ",") { own[String(controller)] = String(parts[2]) }
        }
        return own
    }

    private static func normalized(_ path: String) -> String { path == "/" ? "" : path }

    /// Removes what earlier hosts left (one killed mid-window): empty `bahost-window-*` folders. Once, at the probe,
    /// before this process makes any: a folder another thread just made is empty too.
    private static func pruneStale(in parents: [String]) {
        for parent in parents {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
            where name.hasPrefix("bahost-window-") {
                rmdir("\(parent)/\(name)")  // refused while it holds a process: then it is not stale
            }
        }
    }

    private static func write(_ text: String, to path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return text.withCString { Glibc.write(fd, $0, strlen($0)) } == text.utf8.count
    }

    private static let counter = Atomic<Int>(0)
}
