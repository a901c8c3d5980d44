/// How long and how large one extension window may get.
public struct WindowLimits: Sendable, Hashable {
    /// Wall time from spawning the window's process to `extensionWillTerminate`. Loading counts: a constructor that
    /// hangs is as stuck as an entry point that hangs.
    public var budget: Duration
    /// Time `extensionWillTerminate` (or a clean exit) gets before the process is killed.
    public var grace: Duration
    /// Resident memory above which the process is killed.
    public var memoryBytes: Int64

    /// Apple runs an extension for seconds, not minutes, per wake-up, and warns that it "may be terminated" past "a
    /// few megabytes". A Swift extension needs about 20 MiB just to load its runtime and Foundation, so the default
    /// memory limit is 128 MiB; 30 s and 2 s give an extension time to parse a large manifest and save its state.
    public static let `default` = WindowLimits(budget: .seconds(30), grace: .seconds(2), memoryBytes: 128 << 20)

    public init(budget: Duration, grace: Duration, memoryBytes: Int64) {
        self.budget = budget
        self.grace = grace
        self.memoryBytes = memoryBytes
    }
}

extension Duration {
    /// The duration in seconds, for reports and JSON.
    public var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// The duration in whole nanoseconds, for the system's clocks and timeouts.
    public var inNanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }

    /// "7 days", "2 hours", "90 s": a limit as a message names it, in the largest unit that holds it whole.
    public var spoken: String {
        let seconds = components.seconds
        for (unit, name) in [(86_400, "day"), (3_600, "hour"), (60, "minute")] where seconds >= unit && seconds % Int64(unit) == 0 {
            let count = seconds / Int64(unit)
            return "\(count) \(name)\(count == 1 ? "" : "s")"
        }
        return "\(seconds) s"
    }
}
