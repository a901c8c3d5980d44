import Foundation
import Testing
import TestSupport

/// The daemon's own threads carry the names docs/ARCHITECTURE.md lists, in the kernel, where `ps -L`, `top -H` and
/// a debugger read them.
@Suite(.ownThreads) struct DaemonThreadsTests {
    /// The kernel's names of a process's threads, one per thread.
    func threadNames(_ pid: Int32) throws -> [String] {
        let tasks = "/proc/\(pid)/task"
        return try FileManager.default.contentsOfDirectory(atPath: tasks).compactMap {
            try? String(contentsOfFile: "\(tasks)/\($0)/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
        }
    }

    @Test func theDaemonsThreadsAreNamed() throws {
        let daemon = try ServiceDaemon()
        // At rest: the engine's threads, the listener's and the declared-apps watcher's (a client's read thread lives
        // only while it is connected). Each names itself as it starts: looked at until all have.
        let wanted = ["bahost-transfer", "bahost-blocking", "bahost-accept", "bahost-apps-dir"]
        let pid = daemon.process.processIdentifier
        let named = try ServiceDaemon.waitUntil(10) { try Set(wanted).isSubset(of: threadNames(pid)) }
        #expect(named, "\((try? threadNames(pid)) ?? [])")
        // The blocking pool: two threads per concurrent transfer and one more (four transfers by default).
        #expect(try ServiceDaemon.waitUntil(10) { try threadNames(pid).filter { $0 == "bahost-blocking" }.count == 9 })
        #expect(daemon.stop(SIGTERM) == 0)
    }
}
