import Delivery
import ExtensionRuntime
import Foundation
import HostVocabulary
import Queue
import Synchronization
import Transfer
import Vocabulary

/// What every part of the engine shares: the queue, the data root, the settings, the transfer layer, the blocking
/// pool, the app delegates, and the observer that hears each event. Made once by `HostEngine`.
final class EngineContext: Sendable {
    let store: QueueStore
    let dataRoot: DataRoot
    let settings: HostEngine.Settings
    let observe: LifecycleObserver
    let client: TransferClient
    /// The blocking pool: where what waits for the disk or the queue's writer runs, for the transfers (from a body's
    /// end to its outcome) and the manifest fetch, two threads per concurrent transfer and one more for manifests;
    /// and, on threads beyond those, what blocks for long: windows, pack installs, archives unpacked as they arrive.
    /// Stopped by `HostEngine.shutdown`, last.
    let blocking: BlockingPool
    /// Running apps' delegates, which get completions and challenges before the extension (the service's apps).
    let delegates: AppDelegateRouter?
    /// What wakes the engine's loop, and what its drains wait for: one stream (`EngineEvents`).
    let events = EngineEvents()
    let launchGate = LaunchGate()
    let credentials = Credentials()
    /// The hosts the machine has no path to, and when each is probed next.
    let networkWaits = NetworkWaitsDriver()
    /// Managed packs' archives unpacked while they download.
    let streamedUnpacks = StreamedUnpacks()

    init(
        store: QueueStore, dataRoot: DataRoot, settings: HostEngine.Settings, observe: @escaping LifecycleObserver,
        client: TransferClient, delegates: AppDelegateRouter?
    ) {
        self.store = store
        self.dataRoot = dataRoot
        self.settings = settings
        self.observe = observe
        self.client = client
        self.delegates = delegates
        blocking = BlockingPool(threads: 2 * settings.maximumConcurrentTransfers + 1)
    }

    /// The engine's driver, once made (`EngineDriver.init` attaches itself): held weakly, since the driver holds the
    /// context. Without one nothing runs, and the calls below only wake.
    var driver: EngineDriver? { driverLink.withLock { $0.driver } }
    private let driverLink = Mutex(WeakDriver())
    private struct WeakDriver { weak var driver: EngineDriver? }

    func attach(_ driver: EngineDriver) { driverLink.withLock { $0.driver = driver } }

    /// A download was queued: the driver wakes the engine if it could start now (`EngineDriver.queued`).
    func queued(_ download: QueuedDownload) {
        if let driver {
            driver.queued(download)
        } else if download.foreground {
            wakeNow()
        } else {
            events.post(.queueChanged)
        }
    }

    /// Stops a running transfer whose row is gone (cancelled, uninstalled) and deletes its partial file: the driver's
    /// state cancels its task, or drops it from the reserve (`cancelled`).
    func stopTransfer(_ uniqueIdentifier: String) {
        driver?.send(.cancelled(uniqueIdentifier))
        credentials.forget(uniqueIdentifier)
        unlink(dataRoot.partialPath(for: uniqueIdentifier))
        events.post(.transferEnded)
    }

    /// Wakes the engine for what must not wait for the pace of its turns (`EngineDriver.paceNextTurn`): a foreground
    /// download, a promotion, a delegate.
    func wakeNow() {
        events.post([.queueChanged, .turnNow])
    }

    /// Announces `appMayLaunch` once every essential download of an app that waits for them has ended.
    func announceLaunchIfReady(_ appIdentifier: String) throws {
        guard launchGate.isWaiting(appIdentifier) else { return }
        guard try !store.hasActiveDownloads(for: appIdentifier, essential: true),
            try !store.hasPendingPackCompletions(for: appIdentifier, essential: true)
        else { return }
        if launchGate.open(appIdentifier) { observe(.appMayLaunch(appIdentifier: appIdentifier)) }
    }
}

/// Apps whose install or update content request queued essential downloads that have not all ended yet.
final class LaunchGate: Sendable {
    private let waiting = Mutex(Set<String>())

    func close(_ appIdentifier: String) { waiting.withLock { _ = $0.insert(appIdentifier) } }
    func isWaiting(_ appIdentifier: String) -> Bool { waiting.withLock { $0.contains(appIdentifier) } }
    /// True for the one caller that opened it.
    func open(_ appIdentifier: String) -> Bool { waiting.withLock { $0.remove(appIdentifier) != nil } }
}

extension DataRoot {
    /// The app group a window of `app` gets: its identifier and its container.
    func appGroup(of app: AppRecord) -> ExtensionWindow.AppGroup {
        ExtensionWindow.AppGroup(identifier: app.appGroupIdentifier, container: container(for: app.appGroupIdentifier).path)
    }
}
