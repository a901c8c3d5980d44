import Foundation

/// Background processes a test lab starts (a bus, a stand-in service, a display), each with its output in a log
/// file, stopped and reaped by `stopAll`. posix_spawn, kill and waitpid: Foundation's Process left such processes
/// unreaped after `terminate`, and its `waitUntilExit` never returned.
public final class SpawnedProcesses: @unchecked Sendable {
    private var pids: [pid_t] = []

    public init() {}

    /// Starts `executable` with the tests' environment and `environment` on top, its output in `log`; returns its PID.
    @discardableResult
    public func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String], log: String
    ) throws -> pid_t {
        var fileActions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fileActions)
        defer { posix_spawn_file_actions_destroy(&fileActions) }
        posix_spawn_file_actions_addopen(&fileActions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&fileActions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&fileActions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { strdup("\($0)=\($1)") } + [nil]
        defer { variables.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, executable, &fileActions, nil, argv, variables) == 0 else {
            throw LabFailure("cannot start \(executable)")
        }
        pids.append(pid)
        return pid
    }

    /// Stops each (SIGTERM, then SIGKILL after 2 s), last started first, and reaps it.
    public func stopAll() {
        for pid in pids.reversed() {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            for _ in 0..<100 where waitpid(pid, &status, WNOHANG) == 0 { usleep(20_000) }
            if waitpid(pid, &status, WNOHANG) == 0 {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
            }
        }
        pids = []
    }

    /// Polls `condition` every 25 ms, 5 s at most.
    public static func wait(_ condition: () -> Bool) -> Bool {
        for _ in 0..<200 {
            if condition() { return true }
            usleep(25_000)
        }
        return false
    }
}

/// A lab that could not be set up, and why.
public struct LabFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
