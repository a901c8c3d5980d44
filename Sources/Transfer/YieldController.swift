import Foundation

/// How much a background transfer may have in flight, decided from the connection's round-trip time as the
/// receiver sees it: a receiver-side, delay-based controller in the manner of rLEDBAT (RFC 9840, on LEDBAT's
/// RFC 6817), so that a background download uses the capacity the user's own traffic leaves idle and gives it back
/// the moment that traffic makes a queue. It sets the receive window, as rLEDBAT does: what a connection has in
/// flight is what it can add to a queue, and a window-limited sender keeps the measurements coming (a rate enforced
/// by reading slowly let the socket's buffer fill, the window close, and the samples stop). A value, with no clock
/// or socket of its own: the transfer thread feeds it the kernel's receive RTT (`TCP_INFO`'s `tcpi_rcv_rtt`) and
/// applies the window it returns (`SO_RCVBUF`) (`YieldControllerTests`).
///
/// The rule: the queueing delay is the current delay (the least of the last half second) less the base delay (the
/// least seen over the last two minutes, in 10-second buckets). Below `target`, the window grows by up to a quarter
/// each `interval`, in proportion to the room left; above it, it shrinks in proportion to the excess, by half at
/// most each interval, to no less than `floor`.
struct YieldController: Sendable {
    /// The queueing delay a background transfer may add: a video call's budget is well above it.
    static let target = Duration.milliseconds(12)
    /// How often the window is decided.
    static let interval = Duration.milliseconds(100)
    /// The least window: two segments (of the connection's own size: 64 KiB on loopback), so that the connection
    /// keeps moving and measuring.
    static let floorSegments: Double = 2
    static let floor: Double = floorSegments * 1448
    /// The most: the kernel's default ceiling for a receive buffer's autotuning.
    static let ceiling: Double = 6 * 1024 * 1024
    /// Where a new connection starts: no queue yet says nothing of the capacity, so it is found by growing.
    static let initialWindow: Double = 64 * 1024
    static let bucketLength = Duration.seconds(10)
    static let bucketsKept = 12
    /// The current delay is the least of the last half second's samples: a sender that pauses on its own (a server
    /// that limits its rate) echoes stale timestamps between its bursts, which a shorter filter took for a queue.
    static let currentSamples = 25

    /// The base delay's buckets: the least delay seen in each, the newest last.
    private(set) var buckets: [Duration] = []
    private var bucketStarted: ContinuousClock.Instant?
    private var recent: [Duration] = []
    private(set) var window = Self.initialWindow
    private var lastDecision: ContinuousClock.Instant?
    /// The least window the connection's segments allow.
    private var least = Self.floor

    var baseDelay: Duration? { buckets.min() }
    var currentDelay: Duration? { recent.min() }
    var queueingDelay: Duration? {
        guard let base = baseDelay, let current = currentDelay else { return nil }
        return current - base
    }

    /// A sample of the receive RTT at `now` (zero when the kernel has none), with the size of the segments the
    /// connection receives. Returns the window to apply, in bytes, at the first sample and then each time an
    /// interval has passed since the last decision; nil otherwise.
    mutating func sample(rtt: Duration, segment: Int = 1448, now: ContinuousClock.Instant) -> Int? {
        least = max(Self.floor, Self.floorSegments * Double(segment))
        if rtt > .zero { record(rtt, now: now) }
        guard let last = lastDecision else {
            lastDecision = now
            return Int(window)
        }
        guard now - last >= Self.interval else { return nil }
        lastDecision = now
        decide()
        return Int(window)
    }

    private mutating func record(_ rtt: Duration, now: ContinuousClock.Instant) {
        recent.append(rtt)
        if recent.count > Self.currentSamples { recent.removeFirst() }
        if let started = bucketStarted, now - started < Self.bucketLength, !buckets.isEmpty {
            buckets[buckets.count - 1] = min(buckets[buckets.count - 1], rtt)
        } else {
            buckets.append(rtt)
            bucketStarted = now
            if buckets.count > Self.bucketsKept { buckets.removeFirst() }
        }
    }

    private mutating func decide() {
        guard let queueing = queueingDelay else { return }
        let offTarget = (Self.target - queueing).inSeconds / Self.target.inSeconds
        if offTarget >= 0 {
            window *= 1 + 0.25 * offTarget
        } else {
            window *= max(0.5, 1 + 0.5 * offTarget)
        }
        window = min(max(window, least), Self.ceiling)
    }
}
