/// One app's deliveries as the engine's state keeps them (`EngineState`), as a value: its decisions are functions of
/// this state, the queue's counts and the instant given, so that each rule is tested with no queue, no clock and no
/// window.
///
/// The app's phase, explicit (`phase`): idle (nothing waits); batching (completions wait for the extension's next
/// batch, since an instant); delivering (one delivery runs, its task the engine driver's); backing off (the last deliveries
/// failed, the next may start at a time). Beside it, two things that outlive a phase: the claims held by a receiver
/// (an app process in its callback, a window a killed service left), settled again every `claimCheckInterval`; and
/// the pace of the extension's batches.
package struct AppDelivery: Sendable {
    package enum Phase: Sendable, Equatable {
        case idle
        case batching(since: ContinuousClock.Instant)
        case delivering
        case backingOff(until: ContinuousClock.Instant)
    }

    /// Deliveries that failed in a row: how many, the last error, and when the next may start.
    package struct Failure: Sendable, Equatable {
        package var count: Int
        package var error: String
        package var retryAt: ContinuousClock.Instant
    }

    /// What the queue says of the app when the engine looks (`QueueStore.Snapshot`), and who receives at once.
    package struct Queue: Sendable {
        package var pendingCompletions: Int
        package var hasActiveDownloads: Bool
        /// A running delegate, or the host's own pack installer: completions go at once, not in batches.
        package var receivesAtOnce: Bool

        package init(pendingCompletions: Int, hasActiveDownloads: Bool, receivesAtOnce: Bool) {
            self.pendingCompletions = pendingCompletions
            self.hasActiveDownloads = hasActiveDownloads
            self.receivesAtOnce = receivesAtOnce
        }
    }

    package static let claimCheckInterval = Duration.seconds(1)
    /// Failures in a row after which a drain (`bahost run`, `bahost resume`) stops waiting for the app's completions:
    /// about 3 s of retries, enough for a disk that was briefly full; what is left stays pending for the next run or
    /// the service.
    package static let attemptsBeforeLeavingPending = 3

    /// Whether a delivery runs.
    package var delivering = false
    /// When the oldest completion waiting for a batch appeared.
    package private(set) var pendingSince: ContinuousClock.Instant?
    package private(set) var failure: Failure?
    /// When claims held by a receiver were last settled; nil when none is held.
    package private(set) var claimsCheckedAt: ContinuousClock.Instant?
    package private(set) var deliveryEnded: ContinuousClock.Instant?
    /// How many completions the extension gets in its next window.
    package var pace = BatchPace()

    package init(delivering: Bool = false) {
        self.delivering = delivering
    }

    package var phase: Phase {
        if delivering { return .delivering }
        if let failure { return .backingOff(until: failure.retryAt) }
        if let pendingSince { return .batching(since: pendingSince) }
        return .idle
    }

    /// The wait after `failures` failed deliveries in a row: 1 s, doubling, at most a minute (the service keeps
    /// trying, but a container's folder that stays broken must not cost a window and a log line every second).
    package static func retryDelay(afterFailures failures: Int) -> Duration {
        min(.seconds(1 << min(max(failures - 1, 0), 6)), .seconds(60))
    }

    /// A completion was recorded at `now`: it waits for a batch from then, if nothing waited before it.
    package mutating func recorded(at now: ContinuousClock.Instant) {
        if pendingSince == nil { pendingSince = now }
    }

    /// Whether the app's completions are due at `now`: at once for a receiver that takes them so; for the extension
    /// when a batch is full, when the app's transfers are done, or when the oldest has waited `delay`.
    package mutating func isDue(_ queue: Queue, delay: Duration, at now: ContinuousClock.Instant) -> Bool {
        guard queue.pendingCompletions > 0 else {
            pendingSince = nil
            return false
        }
        if queue.receivesAtOnce || queue.pendingCompletions >= pace.size || !queue.hasActiveDownloads { return true }
        recorded(at: now)
        return now - pendingSince! >= delay
    }

    /// Whether claims are to be settled at `now`: at once the first time they are seen, then every
    /// `claimCheckInterval`; never for claims read (at `readSince`) before the last delivery ended, which may have
    /// been its own window's, settled since.
    package mutating func claimsDue(held: Bool, readSince: ContinuousClock.Instant, at now: ContinuousClock.Instant) -> Bool {
        if let deliveryEnded, deliveryEnded > readSince { return false }
        guard held else {
            claimsCheckedAt = nil
            return false
        }
        guard let last = claimsCheckedAt else { return true }
        return now - last >= Self.claimCheckInterval
    }

    /// Whether a delivery may start at `now`: none runs, and no failure asks to wait.
    package func mayStart(at now: ContinuousClock.Instant) -> Bool {
        !delivering && (failure.map { now >= $0.retryAt } ?? true)
    }

    /// A delivery starts: what waited for a batch goes with it.
    package mutating func deliveryStarted() {
        pendingSince = nil
    }

    /// Claims were settled at `now`: some are still held (to look at again), or none.
    package mutating func claimsSettled(stillHeld: Bool, at now: ContinuousClock.Instant) {
        claimsCheckedAt = stillHeld ? now : nil
    }

    /// How a delivery's end leaves the app.
    package enum Ended: Sendable, Equatable {
        case delivered
        /// It failed: the next try comes after this wait.
        case retry(after: Duration)
        /// It failed once too often for a drain, which stops waiting (`leftPending`).
        case leftPending
    }

    /// The delivery ended at `now`, well or with `error`.
    package mutating func ended(error: String?, draining: Bool, at now: ContinuousClock.Instant) -> Ended {
        delivering = false
        deliveryEnded = now
        guard let error else {
            failure = nil
            return .delivered
        }
        let count = (failure?.count ?? 0) + 1
        let delay = Self.retryDelay(afterFailures: count)
        failure = Failure(count: count, error: error, retryAt: now + delay)
        return draining && count >= Self.attemptsBeforeLeavingPending ? .leftPending : .retry(after: delay)
    }

    /// The last error, when a drain no longer waits for the app's completions: its last
    /// `attemptsBeforeLeavingPending` deliveries failed in a row.
    package func leftPending(draining: Bool) -> String? {
        guard draining, let failure, failure.count >= Self.attemptsBeforeLeavingPending else { return nil }
        return failure.error
    }

    /// The earliest of: the waiting batch due, claims to settle again, a failed delivery to try again (a retry time
    /// past is no deadline: the delivery starts when it is due, like any other); nil when none.
    package func nextDeadline(delay: Duration, at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        [pendingSince.map { $0 + delay }, claimsCheckedAt.map { $0 + Self.claimCheckInterval },
         failure.map(\.retryAt).flatMap { $0 > now ? $0 : nil }].compactMap { $0 }.min()
    }
}
