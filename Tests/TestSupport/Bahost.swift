import Foundation
import Synchronization

/// The `bahost` executable, run as a user or a script runs it.
public enum Bahost {
    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String

        public init(status: Int32, stdout: String, stderr: String) {
            self.status = status
            self.stdout = stdout
            self.stderr = stderr
        }

        /// stdout as one JSON object.
        public func json() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] else {
                throw POSIXError(.EBADMSG)
            }
            return object
        }

        /// stdout as JSON lines, one event each.
        public func events() -> [[String: Any]] {
            stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }

        public func events(_ name: String) -> [[String: Any]] { events().filter { $0["event"] as? String == name } }
    }

    /// Runs `bahost ARGUMENTS` (or another of the package's programs) to its end.
    public static func run(
        _ arguments: [String], environment: [String: String] = [:], executable: String = TestPlugins.bahost
    ) throws -> Result {
        try finish(start(arguments, environment: environment, executable: executable))
    }

    /// Waits for a process `start` started to end, and returns what it printed.
    public static func finish(_ process: (process: Process, out: Pipe, err: Pipe)) -> Result {
        let stdout = process.out.fileHandleForReading.readDataToEndOfFile()
        let stderr = process.err.fileHandleForReading.readDataToEndOfFile()
        process.process.waitUntilExit()
        return Result(
            status: process.process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Waits for a process `start` started to end, for at most `seconds`; nil once they passed (the process is then
    /// killed: it waited for something it should not have).
    public static func finish(_ process: (process: Process, out: Pipe, err: Pipe), within seconds: Double) -> Result? {
        final class Killed: Sendable { let value = Mutex(false) }
        let killed = Killed()
        let killer = DispatchWorkItem {
            if process.process.isRunning {
                killed.value.withLock { $0 = true }
                kill(process.process.processIdentifier, SIGKILL)
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: killer)
        let result = finish(process)
        killer.cancel()
        return killed.value.withLock { $0 } ? nil : result
    }

    /// Starts `bahost ARGUMENTS` and returns at once (for tests that kill it).
    public static func start(
        _ arguments: [String], environment: [String: String] = [:], executable: String = TestPlugins.bahost
    ) throws -> (process: Process, out: Pipe, err: Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        return (process, out, err)
    }
}
