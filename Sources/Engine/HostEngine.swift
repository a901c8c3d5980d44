import CHostSupport
import Delivery
import ExtensionRuntime
import Foundation
import HostVocabulary
import Queue
import Synchronization
import Transfer
import Vocabulary

/// Runs Apple's life cycle for installed apps, in four parts that data flows through one way:
/// `ContentRequestRunner` (manifest, window, admission) → the queue → `EngineDriver` (the engine's state: what runs
/// next, each turn's record, when each app's completions go) → `TransferJob` (one download to its outcome) →
/// `CompletionDelivery` (the app's delegate or an extension window).
///
/// Everything the engine decides is in the queue before it acts on it, so a host killed at any moment picks up
/// where it was with `drain` (partial files resume, finished files are not fetched again, completions are still
/// delivered).
public final class HostEngine: Sendable {
    public struct Settings: Sendable {
        /// A PEM file of certificate authorities trusted besides the system's (private CDNs, tests).
        public var additionalCAFile: String?
        /// How long to keep trying to connect to a server before waiting for the network.
        public var connectTimeout: Duration
        /// How long a server may stay silent mid-response before the attempt is retried.
        public var readTimeout: Duration
        /// The delay before the first retry of a transient failure; each later one doubles it (with jitter).
        public var retryDelay: Duration
        /// Attempts per download, the first included, before a transient failure is final. An attempt that finds no
        /// path to the server (offline) is not counted.
        public var maximumAttempts: Int
        /// How long a download may wait for the network (no path to its server) before it fails: URLSession's
        /// `timeoutIntervalForResource`, 7 days by default as there.
        public var resourceTimeout: Duration
        /// The most bytes a second all transfers may receive together, nil for no limit (`limitRate` changes it).
        public var maximumRate: Int64?
        /// Whether background downloads yield to the machine's other traffic (`YieldController`).
        public var backgroundYields = true
        public var limits: WindowLimits
        /// Transfers on the network at once, over all apps (`TransferSlots`: one whose body has arrived no longer
        /// counts while its file is synced and recorded).
        public var maximumConcurrentTransfers: Int
        /// Transfers on the network at once to one host.
        public var maximumTransfersPerHost: Int
        /// How long completions may wait to be batched into one window while transfers are still running.
        public var deliveryDelay: Duration
        /// How long the transfers that end may gather before the engine's next turn records them, while the reserve
        /// starts the next ones (`EngineDriver.paceNextTurn`).
        public var turnPace: Duration
        /// The transfer threads (`TransferConfiguration.transferThreads`).
        public var networkThreads: Int
        /// Where the session that shares packs with peers listens (libtorrent's `listen_interfaces`), once the
        /// person's rules name someone (`applyPeerRules`); nil: this engine never shares (docs/PEERS.md).
        public var peerListen: String?
        /// How long a swarm may find no new piece before its download falls back to HTTP.
        public var peerStall: Duration = .seconds(30)

        public init(
            additionalCAFile: String? = nil, connectTimeout: Duration = .seconds(10), readTimeout: Duration = .seconds(30),
            retryDelay: Duration = RetryPolicy.default.baseDelay, maximumAttempts: Int = RetryPolicy.default.maximumAttempts,
            limits: WindowLimits = .default, maximumConcurrentTransfers: Int = 4, maximumTransfersPerHost: Int = 2,
            deliveryDelay: Duration = .seconds(2), turnPace: Duration = .milliseconds(10), networkThreads: Int = 1,
            resourceTimeout: Duration = .seconds(7 * 86_400), maximumRate: Int64? = nil, backgroundYields: Bool = true
        ) {
            self.resourceTimeout = resourceTimeout
            self.backgroundYields = backgroundYields
            self.maximumRate = maximumRate
            self.additionalCAFile = additionalCAFile
            self.connectTimeout = connectTimeout
            self.readTimeout = readTimeout
            self.retryDelay = retryDelay
            self.maximumAttempts = maximumAttempts
            self.limits = limits
            self.maximumConcurrentTransfers = maximumConcurrentTransfers
            self.maximumTransfersPerHost = maximumTransfersPerHost
            self.deliveryDelay = deliveryDelay
            self.turnPace = turnPace
            self.networkThreads = networkThreads
        }

        /// The transfer layer's configuration.
        var transfer: TransferConfiguration {
            TransferConfiguration(
                additionalCAFile: additionalCAFile, connectTimeout: connectTimeout, readTimeout: readTimeout,
                transferThreads: networkThreads)
        }

        var retry: RetryPolicy {
            var retry = RetryPolicy.default
            retry.baseDelay = retryDelay
            retry.maximumAttempts = maximumAttempts
            return retry
        }
    }

    // What the engine's parts share, made once here; each part is given what it uses (below, and `EngineDriver`).
    let store: QueueStore
    public let dataRoot: DataRoot
    let settings: Settings
    let observe: LifecycleObserver
    let client: TransferClient
    /// The blocking pool: where what waits for the disk or the queue's writer runs, for the transfers (from a body's
    /// end to its outcome) and the manifest fetch, two threads per concurrent transfer and one more for manifests;
    /// and, on threads beyond those, what blocks for long: windows, pack installs, archives unpacked as they arrive.
    /// Stopped by `shutdown`, last.
    let blocking: BlockingPool
    /// Running apps' delegates, which get completions and challenges before the extension (the service's apps).
    let delegates: AppDelegateRouter?
    /// What wakes the engine's loop, and what its drains wait for: one stream.
    let events = EngineEvents()
    let launchGate: LaunchGate
    let credentials = Credentials()
    /// The hosts the machine has no path to, and when each is probed next; the machine's conditions.
    let networkWaits = NetworkWaitsDriver()
    /// Managed packs' archives unpacked while they download.
    let streamedUnpacks = StreamedUnpacks()
    /// A managed app's packs.
    let managedPacks: ManagedPacks
    /// Managed packs' archives shared with the machines on the network.
    let peers: PeerSharing
    /// Makes each transfer's job (the driver's).
    let jobs: TransferJobs
    let driver: EngineDriver
    /// An exclusive `flock` on the data root, held for the engine's life (the kernel releases it if the host dies).
    private let dataRootLock: Int32

    /// - Parameter router: where completions and challenges go before the extension (the service's apps).
    public init(
        dataRoot: DataRoot, settings: Settings, router: AppDelegateRouter? = nil,
        observe: @escaping LifecycleObserver
    ) throws {
        // Two arenas for the whole process (the daemon, `bahost run`): a connection's or transfer's thread then shares
        // one whose freed memory a trim gives back.
        bahost_tune_heap_for_service(2)
        try dataRoot.prepare()
        // One engine per data root: a second (a `bahost run` beside the daemon) would perform the same transfers.
        dataRootLock = open(dataRoot.url.appendingPathComponent("lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard dataRootLock >= 0, flock(dataRootLock, LOCK_EX | LOCK_NB) == 0 else {
            if dataRootLock >= 0 { close(dataRootLock) }
            throw EngineError.dataRootInUse(dataRoot.url.path)
        }
        let store: QueueStore
        let client: TransferClient
        do {
            store = try QueueStore(path: dataRoot.queuePath)
            // Transfers that were moving when a previous host died are queued again, to resume.
            try store.recoverInterruptedTransfers()
            // Sandboxed apps' containers live in their sandboxes' folders.
            for app in try store.apps() {
                dataRoot.sandboxHomes.place(app.appIdentifier, group: app.appGroupIdentifier, home: app.sandboxHome)
            }
            // Last: once made, the client and the transfer threads must be shut down, so nothing after them may throw.
            client = try TransferClient(settings.transfer)
        } catch {
            close(dataRootLock)
            throw error
        }
        self.store = store
        self.dataRoot = dataRoot
        self.settings = settings
        self.observe = observe
        self.client = client
        delegates = router
        blocking = BlockingPool(threads: 2 * settings.maximumConcurrentTransfers + 1)
        launchGate = LaunchGate(store: store, observe: observe)
        managedPacks = ManagedPacks(
            store: store, dataRoot: dataRoot, blocking: blocking, streamedUnpacks: streamedUnpacks,
            launchGate: launchGate, events: events, observe: observe)
        peers = PeerSharing(
            peersPath: dataRoot.peersPath, listen: settings.peerListen, stallAfter: settings.peerStall,
            observe: observe)
        jobs = TransferJobs(
            client: client, dataRoot: dataRoot, credentials: credentials, networkWaits: networkWaits,
            packs: managedPacks, peers: peers, settings: settings, observe: observe)
        driver = EngineDriver(
            store: store, dataRoot: dataRoot, settings: settings, observe: observe, events: events,
            launchGate: launchGate, networkWaits: networkWaits, blocking: blocking, delegates: delegates,
            packs: managedPacks, jobs: jobs, credentials: credentials)
        client.limitRate(to: settings.maximumRate)
        // The network's changes (links, addresses, routes): every download waiting for it is tried again at once.
        client.onNetworkChange { [networkWaits, events] in
            networkWaits.networkChanged()
            events.wakeNow()
        }
        // What a killed host left half done in a managed app's pack installs (never visible: see PackStore).
        managedPacks.removeLeftovers()
    }

    /// The manifests' fetch.
    var manifests: ManifestFetch {
        ManifestFetch(
            store: store, dataRoot: dataRoot, client: client, blocking: blocking, events: events,
            networkWaits: networkWaits, retry: settings.retry, resourceTimeout: settings.resourceTimeout,
            observe: observe)
    }

    /// The extension windows the content requests and the packs' questions open.
    var windows: WindowLauncher { driver.windows }

    /// An unmanaged app's content requests.
    var contentRequests: ContentRequestRunner {
        ContentRequestRunner(
            store: store, dataRoot: dataRoot, manifests: manifests, windows: windows, launchGate: launchGate,
            events: events, observe: observe)
    }

    deinit { close(dataRootLock) }

    /// Stops running transfers, waits for each to record where it stopped (its partial file stays, to resume), and
    /// stops the transfer threads, then the blocking pool.
    public func shutdown() async {
        await driver.shutdown()
        peers.stop()
        try? await client.shutdown()
        await blocking.shutdown()
    }

    /// Wakes the engine at once: something was queued or promoted, or a delegate arrived.
    public func wake() { events.wakeNow() }

    /// What an app's `BADownloadManager` reaches: from its extension's windows, or from the app through the service.
    public func downloads(for appIdentifier: String) -> AppDownloads {
        driver.downloads(for: appIdentifier)
    }

    // MARK: Content requests

    /// Fetches the app's manifest (or takes `localManifest`), runs the extension's content request in a window, and
    /// queues what it returns under the app's policy. Returns the window's outcome, or nil when the manifest could
    /// not be fetched (its failure is then queued for delivery to the extension, as Apple does).
    public func contentRequest(_ request: ContentRequest, appIdentifier: String, localManifest: String? = nil)
        async throws -> WindowOutcome?
    {
        try await contentRequests.run(
            request, appIdentifier: appIdentifier, localManifest: localManifest)
    }

    // MARK: Apps

    /// Removes an app: its queue, its running transfers and their partial files, its undelivered files, and its
    /// group's container when no other installed app shares the group.
    public func uninstall(_ appIdentifier: String) throws {
        guard let app = try store.app(appIdentifier) else { throw QueueError.unknownApp(appIdentifier) }
        for download in try store.uninstall(appIdentifier) { driver.stopTransfer(download.uniqueIdentifier) }
        driver.send(.appRemoved(appIdentifier))
        _ = launchGate.open(appIdentifier)
        if try !store.apps().contains(where: { $0.appGroupIdentifier == app.appGroupIdentifier }) {
            try? FileManager.default.removeItem(at: dataRoot.container(for: app.appGroupIdentifier))
        }
        dataRoot.sandboxHomes.place(appIdentifier, group: app.appGroupIdentifier, home: nil)
    }

    /// Forgets downloads whose completion was delivered before `cutoff` (QueueStore.pruneDelivered).
    @discardableResult
    public func pruneDelivered(before cutoff: Date) throws -> Int {
        try store.pruneDelivered(before: cutoff)
    }

    // MARK: Draining the queue

    /// Performs transfers and delivers completions for `appIdentifiers` until none of them has work left, but for
    /// completions whose deliveries keep failing: those stay pending, and `.deliveriesLeftPending` says so.
    public func drain(_ appIdentifiers: [String]) async throws {
        try await run(Set(appIdentifiers), forever: false)
    }

    /// Performs transfers and delivers completions for every installed app, as they come, until cancelled (the
    /// service).
    public func serve() async throws {
        try await run(nil, forever: true)
    }

    /// The most bytes a second all transfers may receive together, nil for no limit.
    public var maximumRate: Int64? { client.maximumRate }

    /// Changes `maximumRate`, for the transfers running and those to come (`bahost debug max-rate`).
    public func limitRate(to bytesPerSecond: Int64?) { client.limitRate(to: bytesPerSecond) }

    /// Whether background downloads yield to the machine's other traffic.
    public var backgroundYields: Bool { settings.backgroundYields }

    /// The bytes a second the transfers receive together now.
    public var currentRate: Int64 { client.currentRate }

    /// The proxies the transfers follow (`bahost debug status`).
    public var proxies: ProxySettings { client.proxies }

    /// The hosts the machine has found no path to, and when each is tried next (`bahost debug status`).
    public var hostsWaitingForNetwork: [String: NetworkWaits.Host] { networkWaits.waitingHosts }

    /// What the machine says of its network (NetworkManager, logind) now (`bahost debug status`).
    public var networkConditions: NetworkConditions { networkWaits.conditions }

    /// Takes what the machine now says of its network (the service's system-bus watch): running transfers they hold
    /// back stop, keeping their bytes, and wait without consuming an attempt; downloads they no longer hold go at
    /// once. [any thread]
    public func networkConditionsChanged(to conditions: NetworkConditions) {
        apply { current in
            current.connectivity = conditions.connectivity
            current.metered = conditions.metered
        }
        peers.apply(metered: conditions.isExpensive)
    }

    /// Takes what the person's settings hold back now (the service's `PersonRules`): as for the network's
    /// conditions, running discretionary transfers stop keeping their bytes, and go again once it is lifted.
    /// [any thread]
    public func personHoldChanged(to hold: PersonHold?) {
        apply { $0.person = hold }
    }

    /// Sets the person's ceilings (`rate.background`, `rate.all`, the schedule's and a game's), for the transfers
    /// running and those to come. `--max-rate` stays a ceiling of its own, for every download. [any thread]
    public func limitRates(_ ceilings: RateCeilings) { client.limitRates(ceilings) }

    /// The person's ceilings in force.
    public var rateCeilings: RateCeilings { client.rateCeilings }

    /// The free space every download must leave on its volume (the person's `storage.*`): applied as each starts,
    /// and as it writes. [any thread]
    public var storageFloor: StorageFloor? {
        get { client.storageFloor }
        set { client.storageFloor = newValue }
    }

    /// The machine is about to sleep (logind's `PrepareForSleep(true)`): every transfer stops where it is, and the
    /// partial files they wrote are synced, so that what was received survives a sleep that never wakes (a battery
    /// that runs out). Returns when that is done, or after `limit` (logind waits 5 s for a delay inhibitor by
    /// default). Returns how many transfers it stopped. [any thread but a transfer thread]
    @discardableResult
    public func prepareForSleep(limit: Duration = .seconds(3)) async -> Int {
        let stopping = driver.current().0
        apply { $0.asleep = true }
        // Each transfer's task, ending, posts `queueChanged`: the wait looks again then, never after a sleep.
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let mark = events.mark()
            guard !driver.slots.entries.isEmpty else { break }
            await events.wait(for: .queueChanged, after: mark, timeout: deadline - ContinuousClock.now)
        }
        await withTaskExecutorPreference(blocking) { [dataRoot] in
            for uniqueIdentifier in stopping {
                let fd = open(dataRoot.partialPath(for: uniqueIdentifier), O_RDONLY | O_CLOEXEC)
                if fd >= 0 {
                    fsync(fd)
                    close(fd)
                }
            }
        }
        return stopping.count
    }

    /// The machine woke (`PrepareForSleep(false)`): the downloads that sleep stopped, and every one waiting for the
    /// network, go at once on new connections. [any thread]
    public func resumedFromSleep() {
        apply { $0.asleep = false }
    }

    /// Changes the conditions in one step (the system bus's thread and the person's rules both write them).
    private func apply(_ change: (inout NetworkConditions) -> Void) {
        let conditions = networkWaits.updateConditions(change)
        // The reserve was chosen under the old conditions: the next turn chooses again.
        if conditions.holdsAny { driver.dropReserve() }
        client.apply(networkWaits.conditions)
        events.wakeNow()
    }

    /// How long the engine's turns (a read of the queue, the transfers and deliveries it starts) have taken.
    public var turns: TurnStatistics.Summary { turnStatistics.summary }
    private let turnStatistics = TurnStatistics()

    private func run(_ only: Set<String>?, forever: Bool) async throws {
        driver.send(.draining(!forever))
        while !Task.isCancelled {
            let start = ContinuousClock.now
            let apps = try only ?? Set(store.apps().map(\.appIdentifier))
            let snapshot = try driver.turn(apps)
            driver.deliverDue(apps, snapshot, readSince: start)
            turnStatistics.record(ContinuousClock.now - start)
            let running = !driver.isIdle
            // A drain stops waiting for completions whose deliveries keep failing; the service never does.
            let leftPending = forever ? [:] : apps.reduce(into: [String: String]()) { $0[$1] = driver.leftPending($1) }
            let work = apps.contains { app in
                leftPending[app] == nil ? snapshot.hasWork(app) : snapshot.appsWithActiveDownloads.contains(app)
            }
            if !running && !work && !forever {
                for (app, error) in leftPending.sorted(by: { $0.key < $1.key }) {
                    let count = snapshot.pendingCompletions[app, default: 0]
                    if count > 0 { observe(.deliveriesLeftPending(appIdentifier: app, count: count, error)) }
                }
                return
            }
            if !running && work {
                // Nothing runs in this engine, so a row still marked downloading lost its transfer (the queue failed
                // to record how it ended): queue it again rather than wait for it forever.
                try store.recoverInterruptedTransfers()
            }
            let came = await events.next(
                of: .wakingTheLoop, timeout: driver.nextDeliveryDeadline(within: driver.nextWake(snapshot)))
            if !came.contains(.turnNow) { await driver.paceNextTurn(since: start) }
        }
    }
}

/// Counts the engine's turns and their durations, for `bahost debug status` and the benchmarks.
public final class TurnStatistics: Sendable {
    public struct Summary: Sendable {
        public var count = 0
        public var total = Duration.zero
        public var longest = Duration.zero

        public var mean: Duration { count == 0 ? .zero : total / count }
    }

    private let state = Mutex(Summary())

    var summary: Summary { state.withLock { $0 } }

    func record(_ duration: Duration) {
        state.withLock { summary in
            summary.count += 1
            summary.total += duration
            summary.longest = max(summary.longest, duration)
        }
    }
}

public enum EngineError: Error, CustomStringConvertible {
    case dataRootInUse(String)
    /// A sandboxed app's group is another app's too: its container lives inside one sandbox, which the other
    /// cannot see (nor may it see the other's files).
    case sharedSandboxedGroup(app: String, group: String, other: String)

    public var description: String {
        switch self {
        case .dataRootInUse(let path):
            "another bahost (the daemon, or a run) is using the data root \(path); use its service or another --data-root"
        case .sharedSandboxedGroup(let app, let group, let other):
            "\(app)'s app group \(group) is also \(other)'s: a Flatpak app's group container lives inside its own "
                + "sandbox, so no other app may share it"
        }
    }
}

