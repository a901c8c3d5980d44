/// When to try a failed transfer again: exponential backoff with full jitter, bounded, honouring `Retry-After`
/// within bounds. Pure, so that schedules are easy to test.
public struct RetryPolicy: Sendable, Hashable {
    /// The delay before the first retry; each later one doubles it, up to `maximumDelay`.
    public var baseDelay: Duration
    public var maximumDelay: Duration
    /// The longest `Retry-After` honoured; a server asking for more gets this.
    public var maximumRetryAfter: Duration
    /// Attempts in all, the first included, before a transient failure becomes final.
    public var maximumAttempts: Int

    public static let `default` = RetryPolicy(
        baseDelay: .seconds(1), maximumDelay: .seconds(300), maximumRetryAfter: .seconds(600), maximumAttempts: 8)

    public init(baseDelay: Duration, maximumDelay: Duration, maximumRetryAfter: Duration, maximumAttempts: Int) {
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
        self.maximumAttempts = maximumAttempts
    }

    /// The delay after failed attempt number `attempt` (1 for the first), or nil when no attempt is left.
    /// `random` gives a number in 0..<1 (full jitter: the delay is uniform between 0 and the backoff).
    public func delay(afterAttempt attempt: Int, error: TransferError, random: () -> Double) -> Duration? {
        guard error.kind != .permanent, attempt < maximumAttempts else { return nil }
        if let asked = error.retryAfter { return min(max(asked, .zero), maximumRetryAfter) }
        let exponent = min(attempt - 1, 30)
        let backoff = min(baseDelay * Double(1 << exponent), maximumDelay)
        return backoff * random()
    }
}
