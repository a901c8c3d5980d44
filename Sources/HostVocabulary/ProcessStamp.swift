import Foundation

/// A process, told apart from a later one that reuses its PID by its start time.
public struct ProcessStamp: Codable, Sendable, Hashable {
    public var pid: Int32
    /// Clock ticks after boot at which it started (`/proc/PID/stat`, field 22).
    public var startTime: UInt64

    public init(pid: Int32, startTime: UInt64) {
        self.pid = pid
        self.startTime = startTime
    }

    /// The running process `pid`; nil when there is none (a zombie counts as gone: it runs no code).
    public init?(pid: Int32) {
        guard let stat = Self.stat(pid) else { return nil }
        self = stat.stamp
    }

    public var isAlive: Bool { ProcessStamp(pid: pid) == self }

    /// The process `pid` and its ancestors, nearest first, up to (not including) PID 1, at most `limit` of them.
    public static func ancestry(of pid: Int32, limit: Int = 64) -> [ProcessStamp] {
        var chain: [ProcessStamp] = []
        var next = pid
        while next > 1, chain.count < limit, let stat = stat(next) {
            chain.append(stat.stamp)
            next = stat.parent
        }
        return chain
    }

    /// Fields 3, 4 and 22 of `/proc/PID/stat`: state, parent, start time.
    private static func stat(_ pid: Int32) -> (stamp: ProcessStamp, parent: Int32)? {
        guard pid > 0, let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After the command's name (which may hold anything, parentheses included) come fields 3, 4, …
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 19, fields[0] != "Z", fields[0] != "X", let parent = Int32(fields[1]),
            let start = UInt64(fields[19])
        else { return nil }
        return (ProcessStamp(pid: pid, startTime: start), parent)
    }
}
