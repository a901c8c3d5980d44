/// Paces one transfer's body to a rate: each part of the body is taken only once the parts before it have had the
/// time the rate gives them, so that no more than one part (a read: up to `CURLOPT_BUFFERSIZE`) arrives ahead of the
/// rate. libcurl's own limit (`CURLOPT_MAX_RECV_SPEED_LARGE`) is checked between its reads, and a read goes on while
/// the socket holds data (up to a hundred of them): on a fast link, bursts of megabytes then seconds of nothing,
/// which a person setting 2 MiB/s does not mean (docs/performance/DECISIONS.md #57). A value: the transfer thread
/// owns it, with its exchange.
struct RatePacer: Sendable {
    /// When the bytes taken so far are due, at the rate: a part is taken once this has come.
    private var due: ContinuousClock.Instant?

    /// How far behind `now` the pacer may fall when the transfer was slower than the rate (the server's pace, a
    /// pause): the credit it may then spend at once, a burst of this many seconds at the rate.
    static let credit = Duration.milliseconds(100)

    /// Takes a part of `count` bytes at `now` under `rate` bytes a second: nil when it may be taken (and it is
    /// counted), else when to offer it again.
    mutating func admit(_ count: Int, rate: Int64, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard rate > 0 else {
            due = nil
            return nil
        }
        let start = max(due ?? now, now - Self.credit)
        guard start <= now else { return start }
        due = start + .nanoseconds(Int64(count) * 1_000_000_000 / rate)
        return nil
    }
}
