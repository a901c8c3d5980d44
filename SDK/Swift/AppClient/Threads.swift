import Glibc
import Synchronization

/// The app client's own threads and waits, on pthreads: without Foundation's `Thread` or Dispatch's semaphores, which
/// the app library would otherwise carry (docs/performance/DECISIONS.md #46).
public enum Threads {
    /// [any thread] Runs `body` on a new detached thread of its own.
    public static func start(_ body: @escaping @Sendable () -> Void) {
        final class Box: @unchecked Sendable {  // safe: handed to the one thread that runs it
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let started = pthread_create(&thread, nil, { argument in
            Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().body()
            return nil
        }, box)
        guard started == 0 else { fatalError("pthread_create failed: \(String(cString: strerror(started)))") }
        pthread_detach(thread)
    }

    /// [any thread] Sleeps the calling thread.
    public static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var left = timespec()
        while nanosleep(&request, &left) != 0 && errno == EINTR { request = left }
    }
}

/// A value given once, by one thread, to threads that wait for it (a reply to its caller; a reader thread's end).
public final class OneShot<Value: Sendable>: @unchecked Sendable {  // safe: `value` is read and written under `mutex`
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var value: Value?
    private var given = false

    public init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// [any thread] Gives the value; a second give is ignored.
    public func give(_ newValue: Value) {
        pthread_mutex_lock(mutex)
        if !given {
            value = newValue
            given = true
            pthread_cond_broadcast(condition)
        }
        pthread_mutex_unlock(mutex)
    }

    /// [any thread] Waits for the value as long as it takes.
    public func wait() -> Value {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !given { pthread_cond_wait(condition, mutex) }
        return value!
    }
}
