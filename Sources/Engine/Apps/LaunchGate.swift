import Queue
import Synchronization

/// Apps whose install or update content request queued essential downloads that have not all ended yet, and the
/// one announcement of `appMayLaunch` once they have (what `bahost launch` waits for).
final class LaunchGate: Sendable {
    private let store: QueueStore
    private let observe: LifecycleObserver
    private let waiting = Mutex(Set<String>())

    init(store: QueueStore, observe: @escaping LifecycleObserver) {
        self.store = store
        self.observe = observe
    }

    /// [any thread]
    func close(_ appIdentifier: String) { waiting.withLock { _ = $0.insert(appIdentifier) } }
    func isWaiting(_ appIdentifier: String) -> Bool { waiting.withLock { $0.contains(appIdentifier) } }
    /// True for the one caller that opened it.
    func open(_ appIdentifier: String) -> Bool { waiting.withLock { $0.remove(appIdentifier) != nil } }

    /// Announces `appMayLaunch` once every essential download of an app that waits for them has ended. [any thread;
    /// it reads the queue]
    func announceIfReady(_ appIdentifier: String) throws {
        guard isWaiting(appIdentifier) else { return }
        guard try !store.hasActiveDownloads(for: appIdentifier, essential: true),
            try !store.hasPendingPackCompletions(for: appIdentifier, essential: true)
        else { return }
        if open(appIdentifier) { observe(.appMayLaunch(appIdentifier: appIdentifier)) }
    }
}
