import CHostSupport
import Glibc
import Synchronization

/// A long-lived thread with one owner, who starts it and, to stop it, tells its body to return and then `join`s
/// it: the owner knows the thread has ended (and what it held is released) without looking again and again.
/// The bus watchers run on one each.
public final class OwnedThread: Sendable {
    private let handle: pthread_t
    private let joined = Atomic<Bool>(false)

    /// Starts `body` on a new thread named `name` (the kernel keeps 15 bytes of it). Nil when the system refuses a
    /// thread.
    public init?(name: String, _ body: @escaping @Sendable () -> Void) {
        final class Start {
            let name: String
            let body: @Sendable () -> Void
            init(_ name: String, _ body: @escaping @Sendable () -> Void) { (self.name, self.body) = (name, body) }
        }
        let start = Unmanaged.passRetained(Start(name, body)).toOpaque()
        var handle = pthread_t()
        let made = pthread_create(&handle, nil, { context in
            let start = Unmanaged<Start>.fromOpaque(context!).takeRetainedValue()
            bahost_name_thread(start.name)
            start.body()
            return nil
        }, start)
        guard made == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            return nil
        }
        self.handle = handle
    }

    /// Waits for the body to return (the owner has told it to). Once; later calls return at once.
    /// [the owner's thread, never the thread itself]
    public func join() {
        guard !joined.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pthread_join(handle, nil)
    }

    deinit {
        // An owner that never joined (the body still running, or ended): the thread's resources go when it ends.
        if !joined.load(ordering: .acquiring) { pthread_detach(handle) }
    }
}
