import Glibc

/// The time since an arbitrary start that only moves forward (`CLOCK_MONOTONIC`): what `ContinuousClock.now` gives,
/// for the modules the app library links. `ContinuousClock` lives in Swift's concurrency runtime, which would bring
/// it and libdispatch into the library (docs/performance/DECISIONS.md #46).
public enum MonotonicClock {
    public static var now: Duration {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
