import CHostSupport
import Foundation
import HostVocabulary
import Vocabulary

/// Why a window could not even be opened. Not the extension's fault: the host is missing a part.
public struct WindowSetupError: Error, CustomStringConvertible {
    public var description: String
}

/// The window's child process: `bahost-extension-runner PLUGIN` in a process group of its own, with the window's
/// socket on descriptor 3 and its stdout and stderr on a pipe the host reads.
final class RunnerProcess {
    let pid: pid_t
    /// The host's end of the SOCK_SEQPACKET pair; non-blocking.
    let channel: Int32
    /// The read end of the process's stdout and stderr; non-blocking.
    let output: Int32
    /// Readable when the process ends (-1 where the kernel has no pidfd).
    let exitSignal: Int32
    /// The window's cgroup, where the machine offers one.
    let cgroup: WindowCgroup?
    /// Whether the runner is the init of a PID namespace of its own.
    let isolated: Bool
    private var groupKilled = false
    /// The window's processes, where no cgroup lists them: found in its PID namespace at most this often.
    private var members: [pid_t] = []
    private var membersFoundAt: ContinuousClock.Instant?
    private static let membersScanPeriod = Duration.milliseconds(50)

    /// The runner executable: `BAHOST_RUNNER`; else `bahost-extension-runner` beside the running executable (a build
    /// folder); else in `../libexec/bahost/` from it, where `scripts/install.sh` and the Debian package put it.
    static func locateRunner() throws(WindowSetupError) -> String {
        if let path = ProcessInfo.processInfo.environment["BAHOST_RUNNER"] { return path }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let folder = executable.deletingLastPathComponent()
        let candidates = [
            folder.appendingPathComponent("bahost-extension-runner").path,
            folder.deletingLastPathComponent().appendingPathComponent("libexec/bahost/bahost-extension-runner").path,
        ]
        guard let runner = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw WindowSetupError(
                description: "bahost-extension-runner is in neither \(candidates.joined(separator: " nor ")); build the "
                    + "package (swift build), install it (scripts/install.sh), or set BAHOST_RUNNER")
        }
        return runner
    }

    init(runner: String, plugin: String, environment extra: [String: String], limits: WindowLimits)
        throws(WindowSetupError)
    {
        // Orphans of the window (an extension that forks) are reparented to us, so that we can reap them.
        _ = bahost_become_subreaper()
        signal(SIGPIPE, SIG_IGN)

        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw WindowSetupError(description: "socketpair: \(String(cString: strerror(errno)))")
        }
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else {
            close(pair[0])
            close(pair[1])
            throw WindowSetupError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        defer {
            close(pair[1])
            close(pipeEnds[1])
        }

        // The host's own, but for a proxy's credentials: the proxy stays known, its password is the host's alone.
        var environment = ProxyURL.withoutCredentials(ProcessInfo.processInfo.environment)
        // A crashing Swift extension would otherwise take time writing a backtrace into our output.
        environment["SWIFT_BACKTRACE"] = "enable=no"
        // What the extension sees as ba_host_t.version.
        environment["BAHOST_RELEASE"] = BahostVersion.release
        environment.merge(extra) { $1 }
        let sandboxed = environment["BAHOST_SANDBOX"] != "off"
        // The window as a whole, in its cgroup, where the machine offers one (not when the sandbox is off).
        var cgroup = sandboxed ? WindowCgroup(limitBytes: limits.memoryBytes) : nil
        func spawn(isolated: Bool, in cgroup: WindowCgroup?) -> (Int32, pid_t) {
            var environment = environment
            environment["BAHOST_WINDOW_LIMITS"] = cgroup.map { group in
                "the whole window (cgroup): \(WindowCgroup.maximumTasks) tasks, memory stopped by the kernel at "
                    + "\(group.ceilingBytes >> 20) MiB"
            }
            let joins = (cgroup?.joinFiles ?? []).map { open($0, O_WRONLY | O_CLOEXEC) }
            defer { joins.filter { $0 >= 0 }.forEach { close($0) } }
            guard !joins.contains(where: { $0 < 0 }) else { return (errno, 0) }
            var child: pid_t = 0
            let arguments = [runner, plugin]
            let error = withCStrings(arguments) { argv in
                withCStrings(environment.map { "\($0.key)=\($0.value)" }) { envp in
                    bahost_spawn_window(
                        runner, argv, envp, pair[1], pipeEnds[1], isolated ? 1 : 0, joins, Int32(joins.count), &child)
                }
            }
            return (error, child)
        }
        // The window's own PID namespace (nothing it starts outlives it), unless the sandbox is off or the machine
        // allows no user namespace; the runner then says so in the window's report.
        var isolated = sandboxed
        var (error, child) = spawn(isolated: isolated, in: cgroup)
        if isolated, [EPERM, EINVAL, ENOSPC, EUSERS, ENOSYS].contains(error) {
            isolated = false
            (error, child) = spawn(isolated: false, in: cgroup)
        }
        if error != 0, cgroup != nil {
            // Joining the cgroup was refused (another host pruned it?): the window runs without one.
            cgroup?.remove()
            cgroup = nil
            (error, child) = spawn(isolated: isolated, in: nil)
        }
        guard error == 0 else {
            cgroup?.remove()
            close(pair[0])
            close(pipeEnds[0])
            throw WindowSetupError(description: "cannot start \(runner): \(String(cString: strerror(error)))")
        }
        self.cgroup = cgroup
        self.isolated = isolated
        pid = child
        channel = pair[0]
        output = pipeEnds[0]
        _ = fcntl(channel, F_SETFL, fcntl(channel, F_GETFL) | O_NONBLOCK)
        _ = fcntl(output, F_SETFL, fcntl(output, F_GETFL) | O_NONBLOCK)
        exitSignal = bahost_pidfd_open(child)
    }

    deinit {
        killGroup()
        close(channel)
        close(output)
        if exitSignal >= 0 { close(exitSignal) }
    }

    /// Packets the socket had no room for yet, oldest first: sent, in order, before any later one.
    private var outbox: [[UInt8]] = []
    private var outboxStart = 0

    /// Whether packets wait for room in the socket (the loop then also waits for it to become writable).
    var hasPendingOutput: Bool { outboxStart < outbox.count }

    /// Sends a packet, or keeps it until the socket has room (a window's events all go out at its hello, more than
    /// a socket buffer holds when a delivery has hundreds of completions).
    func send(_ packet: borrowing WirePacket) {
        if hasPendingOutput || !packet.withBytes(trySend) {
            outbox.append(packet.withBytes { Array($0) })
            flush()
        }
    }

    /// Sends what waits, as far as the socket takes it.
    func flush() {
        while outboxStart < outbox.count, outbox[outboxStart].withUnsafeBytes(trySend) {
            outbox[outboxStart] = []
            outboxStart += 1
        }
        if outboxStart == outbox.count {
            outbox.removeAll()
            outboxStart = 0
        }
    }

    /// True once the packet is sent, or can never be (the process is gone: its exit is noticed and classified
    /// separately); false when the socket is full.
    private func trySend(_ bytes: UnsafeRawBufferPointer) -> Bool {
        while true {
            if Glibc.send(channel, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) >= 0 { return true }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return false
            default: return true
            }
        }
    }

    func kill() {
        Glibc.kill(-pid, SIGKILL)
    }

    /// Kills whatever is left of the process group (and of the window's cgroup) and reaps it. Once only; the runner
    /// must be reaped first.
    func killGroup() {
        guard !groupKilled else { return }
        groupKilled = true
        bahost_kill_group(pid)
        cgroup?.remove()
    }

    /// The resident memory of every process of the window, summed: what its cgroup holds, else what its PID
    /// namespace holds (rescanned every `membersScanPeriod`), else the runner's alone.
    var residentBytes: Int64 {
        let pids: [pid_t]
        if let cgroup {
            pids = cgroup.members()
        } else if isolated {
            let now = ContinuousClock.now
            if membersFoundAt.map({ now - $0 >= Self.membersScanPeriod }) ?? true {
                membersFoundAt = now
                var found = [pid_t](repeating: 0, count: WindowCgroup.maximumTasks * 4)
                let count = bahost_namespace_members(pid, &found, Int32(found.count))
                members = count > 0 ? Array(found.prefix(Int(count))) : [pid]
            }
            pids = members
        } else {
            pids = [pid]
        }
        return pids.reduce(0) { $0 + max(0, bahost_resident_bytes($1)) }
    }

    /// The exit status once the process has ended; nil while it runs.
    func tryReap() -> Int32? {
        var status: Int32 = 0
        return bahost_try_reap(pid, &status) == 1 ? status : nil
    }
}

private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var pointers = strings.map { strdup($0) } + [nil]
    defer { pointers.forEach { free($0) } }
    return pointers.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
}
