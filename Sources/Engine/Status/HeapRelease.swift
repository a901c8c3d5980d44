import CHostSupport
import Dispatch
import Synchronization

/// Gives the heap's freed memory back to the system shortly after a burst of work (a large admission, a large
/// reply), so that the daemon's footprint follows what it holds rather than the largest thing it once built.
///
/// Later rather than at once: the burst's last buffers (its events on their way to a command line, the reply being
/// written) are still held at the moment it ends, and a trim then would keep them. Bursts close together share one
/// trim, which walks the whole heap.
public enum HeapRelease {
    private static let scheduled = Atomic(false)

    /// How long after the request the trim runs.
    static let delay = DispatchTimeInterval.milliseconds(300)

    public static func soon() {
        guard !scheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay) {
            scheduled.store(false, ordering: .releasing)
            bahost_release_free_memory()
        }
    }
}
