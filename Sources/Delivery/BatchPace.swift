import ExtensionRuntime
import Vocabulary

/// How many completions an app's next delivery window gets, from how its windows went so far.
///
/// A window's spawn costs far more than a fast extension's callbacks (moving a file). Batches as large as the pace
/// allows wake the extension a few times for thousands of files instead of once per 32 (docs/performance/
/// DECISIONS.md #16). A slow extension keeps small batches, so that a window's budget covers its callbacks: the
/// batch is what a quarter of the budget covers at the last window's pace (its spawn included), and half the last
/// batch after a window that ran out of time.
public struct BatchPace: Sendable {
    /// An app's first batch, before any window showed its pace.
    public static let first = 32
    /// The largest batch: past it, a window's spawn is a small part of its cost anyway.
    public static let maximum = 256

    public private(set) var size = Self.first

    public init() {}

    /// Learns from the window that delivered the last batch: how it stopped, how long it took, and how many of its
    /// callbacks returned.
    public mutating func record(_ stopReason: StopReason, elapsed: Duration, completed: Int, limits: WindowLimits) {
        switch stopReason {
        case .budgetExceeded:
            size = max(1, size / 2)
        case .returned:
            let pace = elapsed / max(1, completed)
            guard pace > .zero else {
                size = Self.maximum
                return
            }
            size = min(Self.maximum, max(1, Int((limits.budget / 4) / pace)))
        case .crashed, .exited, .killedForMemory, .refusedToLoad, .protocolViolation, .runnerFailed:
            // Says nothing about the pace; the delivery attempts each completion is allowed bound what it costs.
            break
        }
    }
}
