import Delivery
import ExtensionRuntime
import Foundation
import HostVocabulary
import Packs
import Peers
import Policy
import Queue
import Synchronization
import Transfer
import Vocabulary

/// One attempt at one download, from the moment a turn marked it moving to its outcome (AOSP's DownloadThread):
/// build the request from the row, run the transfer, then say what happened: finished (the file synced and renamed
/// into the app group's container), failed for good, waiting to retry or for the network, or challenged (the server
/// asked for credentials). It only reports, and never writes the queue: its body's end, its progress and its ending
/// go to the engine's driver (`EngineDriver`), whose state records the outcome in the next turn, in the transaction
/// that starts the next transfers, saves the progress, and asks about a challenge.
struct TransferJob {
    /// How an attempt ended, for the engine to act on.
    enum Ending: Sendable {
        /// Record this in the next turn.
        case outcome(TransferOutcome)
        /// The server answered 401 with a challenge the app may answer: ask, then queue `row` again with the
        /// credentials given, or record `otherwise` (the 401 as final).
        case challenged(ServerChallenge, row: QueuedDownload, otherwise: TransferOutcome)

        /// The outcome to record, when the attempt ended with one rather than a challenge.
        var outcome: TransferOutcome? {
            if case .outcome(let outcome) = self { outcome } else { nil }
        }
    }

    let jobs: TransferJobs
    let queued: QueuedDownload
    let app: AppRecord
    /// `app.policy`, made once for all of the app's transfers that a turn starts.
    let policy: AppPolicy
    /// Where the bytes arrive, and where the finished file goes (the app group's deliveries folder): made once, since
    /// each is an identifier percent-encoded into a path.
    private let partialPath: String
    private let finishedPath: String
    /// Called when the body has ended, on the transfer thread: the slot goes to the next.
    private let bodyEnded: @Sendable () -> Void
    /// Called with the row when its progress (or a new validator) is due to be durable, on the blocking pool; the
    /// row is saved before this returns (a validator must be durable before the bytes it describes are written).
    private let progressed: @Sendable (QueuedDownload) -> Void
    /// Where the job waits for the disk and the queue (nil: where it runs).
    private let blocking: (any TaskExecutor)?

    /// Made by `TransferJobs.job`.
    fileprivate init(
        jobs: TransferJobs, queued: QueuedDownload, app: AppRecord, policy: AppPolicy,
        blocking: (any TaskExecutor)?, bodyEnded: @escaping @Sendable () -> Void,
        progressed: @escaping @Sendable (QueuedDownload) -> Void
    ) {
        self.blocking = blocking
        self.progressed = progressed
        self.jobs = jobs
        self.queued = queued
        self.app = app
        self.policy = policy
        self.bodyEnded = bodyEnded
        partialPath = jobs.dataRoot.partialPath(for: queued.uniqueIdentifier)
        finishedPath = jobs.dataRoot.finishedPath(
            for: queued.uniqueIdentifier, appGroupIdentifier: app.appGroupIdentifier)
    }

    private var credentials: Credentials { jobs.credentials }

    /// Runs the attempt and hands `ended` how it ended: nil when nothing is left to record (the row is gone, or the
    /// queue failed). The request and its body run where this is called (the transfer thread that reads the
    /// response); the sync, verification and rename, and `ended`, on `blocking` (`TransferClient.perform`).
    func run<Ended: Sendable>(ended: (Ending?) -> Ended) async -> Ended {
        let download = queued.download
        let limit = Self.byteLimit(download, policy.allowance)
        // A pack's whole archive is unpacked as it arrives, and every file it holds is checked against the download
        // manifest's index (its size and SHA-256; no file missing, none extra), which installs nothing else: the
        // archive's own SHA-256 would check the same bytes a second time (docs/ASSET-PACKS.md).
        let archiveEntry = download.kind == .assetPack
            ? await withTaskExecutorPreference(blocking) { [jobs, queued, app] in
                jobs.packs.wholeArchiveEntry(of: queued, app: app)  // reads the download manifest
            }
            : nil
        if let archiveEntry, let shared = await sharedFile(archiveEntry) {
            switch await fetchFromPeers(shared, byteLimit: limit) {
            case .some(let ending): return ended(ending)
            case .none: break  // fell back: over HTTP, below
            }
        }
        let recorder = ProgressRecorder(
            packs: jobs.packs, observe: jobs.observe, download: queued, archiveEntry: archiveEntry, blocking: blocking,
            bodyEnded: bodyEnded, progressed: progressed)
        var request = TransferRequest(
            url: download.url ?? "", headers: download.httpHeaders,
            expectedSize: download.sizeIsExact ? download.fileSize : 0, sizeHint: download.fileSize,
            sha256: archiveEntry == nil ? download.sha256 : nil,
            partialPath: partialPath,
            validator: Validator(etag: queued.etag, lastModified: queued.lastModified), byteLimit: limit,
            credential: credentials.credential(for: queued.uniqueIdentifier),
            checkURL: { [policy] url in policy.checkURL(url).map(TransferError.init(refusal:)) })
        // Background downloads use what the user's own traffic leaves idle; essential and foreground ones do not wait.
        request.yields = !queued.isEssential && !queued.foreground && jobs.settings.backgroundYields
        request.networkUse = queued.networkUse
        return await jobs.client.perform(request, observer: recorder, blocking: blocking) { result in
            ended(await settled(result, validator: recorder.validator, byteLimit: limit))
        }
    }

    /// The archive's swarm, when the app, the person and the manifest let it be shared and its URL may be fetched
    /// directly (a proxy would be gone around by the web seed).
    private func sharedFile(_ entry: DownloadManifest.Entry) async -> SwarmFile? {
        guard let url = queued.download.url, policy.checkURL(url) == nil,
            let file = jobs.peers.sharedFile(entry, url: url, app: app, have: false),
            !(await jobs.client.goesThroughProxy(url, blocking: blocking))
        else { return nil }
        return file
    }

    /// Fetches the archive through the swarm: the ending to record, or nil when it fell back to HTTP.
    /// [the transfer's task]
    private func fetchFromPeers(_ file: SwarmFile, byteLimit limit: Int64?) async -> Ending?? {
        let status = queued.status
        let (observe, client, use) = (jobs.observe, jobs.client, queued.networkUse)
        // The space the swarm's file still needs, beside the person's storage floor, as a transfer checks it.
        let space = await withTaskExecutorPreference(blocking) { [file] in
            var info = stat()
            let written = stat("\(file.folder)/\(file.name)", &info) == 0 ? Int64(info.st_blocks) * 512 : 0
            let folder = FileManager.default.fileExists(atPath: file.folder) ? file.folder : jobs.dataRoot.transfersPath
            return client.spaceProblem(writing: file.size - written, in: folder, use: use)
        }
        if let space {
            return .some(await withTaskExecutorPreference(blocking) {
                await settled(.failure(space), validator: nil, byteLimit: limit)
            })
        }
        observe(.began(status, resumingAt: 0))
        let fetched = await jobs.peers.fetch(
            file, uniqueIdentifier: queued.uniqueIdentifier, partialPath: partialPath, hold: { client.hold(use) },
            ceiling: { client.ceiling(use) },
            progress: { have in observe(.progress(status, received: have, expected: file.size)) })
        let figures = jobs.peers.figures(queued.uniqueIdentifier)
        let result: Result<Int64, TransferError>
        switch fetched {
        case .whole(let size):
            if let figures { observe(.peers(status, figures, fellBack: nil)) }
            bodyEnded()
            result = .success(size)
        case .stopped(let error):
            result = .failure(error)
        case .fellBack(let why):
            if let figures { observe(.peers(status, figures, fellBack: why)) }
            return nil
        }
        return .some(await withTaskExecutorPreference(blocking) {
            await settled(result, validator: nil, byteLimit: limit)
        })
    }

    /// What the attempt's result makes of the row, on `blocking`.
    private func settled(
        _ result: Result<Int64, TransferError>, validator: Validator?, byteLimit limit: Int64?
    ) async -> Ending? {
        let uniqueIdentifier = queued.uniqueIdentifier
        do {
            if case .success(let size) = result {
                jobs.packs.streamedUnpacks.finished(uniqueIdentifier, length: size)
            } else {
                jobs.packs.streamedUnpacks.take(uniqueIdentifier)?.abandon()
            }

            // Nothing but a cancel changes a moving row's columns that the engine saves (a promotion sets only
            // `foreground`), so the copy here is current; a cancel deleted the row, which the recording turn finds.
            var current = queued
            current.etag = validator?.etag ?? current.etag
            current.lastModified = validator?.lastModified ?? current.lastModified
            if case .failure(let error) = result,
                error.offline || error.isCancellation || error.held != nil || error.restarts || error.waitsForSpace
            {
                // The server was not reached (or the host stopped the attempt): what the network waits know stands.
            } else {
                jobs.networkWaits.reached(queued.host)
                current.offlineSince = nil
            }
            switch result {
            case .success(let size):
                credentials.forget(uniqueIdentifier)
                return .outcome(try finish(&current, size: size))
            case .failure(let error):
                var failed = current
                let otherwise = fail(&failed, error: error, byteLimit: limit)
                if let challenge = error.challenge, credentials.mayAsk(uniqueIdentifier) {
                    return .challenged(challenge, row: current, otherwise: otherwise)
                }
                credentials.forget(uniqueIdentifier)
                return .outcome(otherwise)
            }
        } catch {
            // The container's folder could not be made: the row stays marked moving, and is queued again to resume
            // once nothing runs (`HostEngine`'s loop). A row cancelled meanwhile is the turn's: it discards the files.
            jobs.observe(.queueFailed("\(uniqueIdentifier): \(error)"))
            return nil
        }
    }

    private func finish(_ queued: inout QueuedDownload, size: Int64) throws -> TransferOutcome {
        // Into the container in one rename: a finished file never appears half-written. The folder is made for the
        // first file (or again, if something removed it), not looked for at every file.
        var moved = rename(partialPath, finishedPath) == 0
        if !moved && errno == ENOENT {
            try FileManager.default.createDirectory(
                at: jobs.dataRoot.deliveries(for: app.appGroupIdentifier), withIntermediateDirectories: true)
            moved = rename(partialPath, finishedPath) == 0
        }
        guard moved else {
            return fail(
                &queued, error: .permanent(Int64(errno), "cannot move the finished file into the container"), byteLimit: nil)
        }
        if app.sharesWithPeers, jobs.peers.isActive, let entry = jobs.packs.wholeArchiveEntry(of: queued, app: app),
            let url = queued.download.url, let file = jobs.peers.sharedFile(entry, url: url, app: app, have: true)
        {
            jobs.peers.serve(file, finishedPath: finishedPath)
        }
        queued.state = .finished
        queued.bytesReceived = size
        queued.filePath = finishedPath
        queued.error = nil
        var finished = outcome(queued, .finished(queued.status), completes: true)
        // The allowance reserved the declared size (nothing, for an unknown one): it is charged the bytes received.
        if size != queued.download.fileSize && !queued.download.sizeIsExact {
            finished.charge = size - queued.download.fileSize
        }
        return finished
    }

    /// The most bytes a transfer whose size is not promised may receive while the app's allowance restricts it:
    /// what the allowance reserved for its declared size, and what is left unreserved. A transfer that passes it
    /// stops with Apple's 204. Nil for a promised size (the transfer enforces it exactly) or no restriction.
    static func byteLimit(_ download: Download, _ allowance: Allowance) -> Int64? {
        guard !download.sizeIsExact, let left = allowance.unreservedBytesLeft(essential: download.isEssential) else {
            return nil
        }
        return download.fileSize + max(0, left)
    }

    private func fail(_ queued: inout QueuedDownload, error: TransferError, byteLimit: Int64?) -> TransferOutcome {
        if error.held != nil || error.restarts { return holdForNetwork(&queued, error: error) }
        if error.waitsForSpace { return waitForSpace(&queued, error: error) }
        // Apple: a foreground download fails at once when the network is away, rather than waiting for it.
        let waits = !(queued.foreground && error.kind == .network)
        if waits && error.offline {
            return waitForNetwork(&queued, error: error)
        }
        let retry = jobs.settings.retry
        if waits, let delay = retry.delay(afterAttempt: queued.attempts, error: error, random: { .random(in: 0..<1) }) {
            let until = Date(timeIntervalSinceNow: delay.inSeconds)
            queued.state = error.kind == .network ? .waitingForNetwork : .waitingToRetry
            queued.retryAt = until
            queued.error = error.error
            queued.bytesReceived = fileLength(partialPath)
            let event = LifecycleEvent.paused(
                queued.status, waitingForNetwork: error.kind == .network, until: until, error: error.error)
            return outcome(queued, event, completes: false)
        }
        let reason = error.code == TransferError.byteLimitExceeded
            ? Allowance.exceeded("'\(queued.identifier)'", limit: byteLimit ?? 0) : error.error
        unlink(partialPath)
        queued.state = .failed
        queued.error = reason
        return outcome(queued, .failed(queued.status, reason), completes: true)
    }

    /// No path to the server: the download waits for the network, consuming no attempt, until its host's next probe
    /// (`NetworkWaits`), for at most the resource timeout from the first attempt that found no path; then it fails.
    private func waitForNetwork(_ queued: inout QueuedDownload, error: TransferError) -> TransferOutcome {
        let now = Date()
        let since = queued.offlineSince ?? now
        let timeout = jobs.settings.resourceTimeout
        guard now.timeIntervalSince(since) < timeout.inSeconds else {
            var reason = error.error
            reason.message = "no path to the server for \(timeout.spoken) (the resource timeout): "
                + reason.message
            unlink(partialPath)
            queued.state = .failed
            queued.error = reason
            return outcome(queued, .failed(queued.status, reason), completes: true)
        }
        // The attempt never reached the server: the network's absence costs none of the server's attempts.
        queued.attempts = max(0, queued.attempts - 1)
        queued.offlineSince = since
        let until = jobs.networkWaits.foundNoPath(queued.host, now: now)
        queued.state = .waitingForNetwork
        queued.retryAt = until
        queued.error = error.error
        queued.bytesReceived = fileLength(partialPath)
        let event = LifecycleEvent.paused(queued.status, waitingForNetwork: true, until: until, error: error.error)
        return outcome(queued, event, completes: false)
    }

    /// Stopped for what the machine says of its network (`NetworkConditions`): the download waits, due at once and
    /// consuming no attempt, and each turn passes it over until the conditions let it go. The resource timeout does
    /// not count this wait: the network is there, and the person chose (a metered connection) or the machine slept.
    /// Stopped for a path that changed (`TransferError.restarts`): the same, and the next turn starts it on the new
    /// path.
    private func holdForNetwork(_ queued: inout QueuedDownload, error: TransferError) -> TransferOutcome {
        waitWithoutAnAttempt(&queued, .waitingForNetwork, until: Date(), error: error)
    }

    /// Too little space for a discretionary download beside the person's storage floor: it waits, consuming no
    /// attempt, and is tried again after `spaceRecheck` (space is freed by whoever filled the volume, which no
    /// event announces).
    private func waitForSpace(_ queued: inout QueuedDownload, error: TransferError) -> TransferOutcome {
        let until = Date(timeIntervalSinceNow: Self.spaceRecheck.inSeconds)
        return waitWithoutAnAttempt(&queued, .waitingToRetry, until: until, error: error)
    }

    /// The download waits in `state` until `until`, keeping its bytes; the attempt that stopped is given back.
    private func waitWithoutAnAttempt(
        _ queued: inout QueuedDownload, _ state: TransferState, until: Date, error: TransferError
    ) -> TransferOutcome {
        queued.attempts = max(0, queued.attempts - 1)
        queued.state = state
        queued.retryAt = until
        queued.error = error.error
        queued.bytesReceived = fileLength(partialPath)
        let event = LifecycleEvent.paused(
            queued.status, waitingForNetwork: state == .waitingForNetwork, until: until, error: error.error)
        return outcome(queued, event, completes: false)
    }

    static let spaceRecheck = Duration.seconds(30)

    private func outcome(_ row: QueuedDownload, _ event: LifecycleEvent?, completes: Bool) -> TransferOutcome {
        TransferOutcome(
            row: row, event: event, completes: completes, partialPath: partialPath, finishedPath: finishedPath)
    }

    private func fileLength(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }
}

/// What every transfer job of the engine uses, and the maker of one job per download started (`EngineDriver.start`).
struct TransferJobs: Sendable {
    let client: TransferClient
    /// Where the partial and finished files are.
    let dataRoot: DataRoot
    /// The credentials given for a download's challenge.
    let credentials: Credentials
    /// The hosts found with no path, and reached again.
    let networkWaits: NetworkWaitsDriver
    /// A pack's archive: its manifest entry, and its unpacking as it arrives.
    let packs: ManagedPacks
    /// A pack's archive shared with peers: its swarm.
    let peers: PeerSharing
    /// The retries, the resource timeout, whether background downloads yield.
    let settings: HostEngine.Settings
    let observe: LifecycleObserver

    /// One attempt at `queued`. The parameters are `TransferJob`'s.
    func job(
        _ queued: QueuedDownload, app: AppRecord, policy: AppPolicy, blocking: (any TaskExecutor)?,
        bodyEnded: @escaping @Sendable () -> Void, progressed: @escaping @Sendable (QueuedDownload) -> Void
    ) -> TransferJob {
        TransferJob(
            jobs: self, queued: queued, app: app, policy: policy, blocking: blocking, bodyEnded: bodyEnded,
            progressed: progressed)
    }
}

/// Makes a transfer's progress durable at bounded intervals and reports it.
private final class ProgressRecorder: TransferObserver {
    /// Starts a pack's streamed unpack; hears of the transfer's beginning and progress.
    private let packs: ManagedPacks
    private let observe: LifecycleObserver
    /// The pack whose whole archive this is, unpacked as it arrives.
    private let archiveEntry: DownloadManifest.Entry?
    /// Where the queue's writes and a pack's unpacking are started: off the transfer thread that reports.
    private let blocking: (any TaskExecutor)?
    private let onBodyEnded: @Sendable () -> Void
    /// Makes the row durable (`TransferJob.progressed`).
    private let save: @Sendable (QueuedDownload) -> Void
    private let lock: Mutex<State>
    private struct State {
        var download: QueuedDownload
        var validator: Validator?
        var savedBytes: Int64 = 0
        var savedAt = ContinuousClock.now
        /// Whether the queue holds the validator of the bytes being written.
        var validatorSaved = false
    }

    init(
        packs: ManagedPacks, observe: @escaping LifecycleObserver, download: QueuedDownload,
        archiveEntry: DownloadManifest.Entry?, blocking: (any TaskExecutor)?, bodyEnded: @escaping @Sendable () -> Void,
        progressed: @escaping @Sendable (QueuedDownload) -> Void
    ) {
        self.packs = packs
        self.observe = observe
        self.archiveEntry = archiveEntry
        save = progressed
        self.blocking = blocking
        onBodyEnded = bodyEnded
        lock = Mutex(State(download: download))
    }

    var validator: Validator? { lock.withLock { $0.validator } }

    /// [transfer thread] A new validator is saved on the blocking pool, before the body's first byte is written.
    func began(validator: Validator, resumingAt offset: Int64) async {
        let (download, save) = lock.withLock { state -> (QueuedDownload, Bool) in
            let stored = Validator(etag: state.download.etag, lastModified: state.download.lastModified)
            state.validator = validator
            state.download.etag = validator.etag
            state.download.lastModified = validator.lastModified
            state.download.bytesReceived = offset
            state.savedBytes = offset
            state.savedAt = .now
            // A stored validator must never describe other bytes than the file's, so a new one is durable before
            // they are written. With none stored the write waits for the first progress report: bytes
            // without a validator are never resumed (the file starts over), which costs at most what arrived before
            // it, and a small file that arrives whole before then is spared a transaction.
            let storedAny = stored.etag != nil || stored.lastModified != nil
            state.validatorSaved = storedAny
            return (state.download, storedAny && stored != validator)
        }
        if save || archiveEntry != nil {
            await withTaskExecutorPreference(blocking) { [packs, archiveEntry, self] in
                if save { self.save(download) }
                // The body starts: the file holds `offset` bytes of this body's archive, and the rest follow.
                if let archiveEntry, let app = try? packs.store.app(download.appIdentifier) {
                    packs.startStreamedUnpack(for: download, entry: archiveEntry, app: app)
                }
            }
        }
        observe(.began(download.status, resumingAt: offset))
    }

    /// Its network slot goes to the next download while this one's file is synced and recorded. [transfer thread]
    func bodyEnded() { onBodyEnded() }

    /// [transfer thread; the last report on the blocking pool] Saves at most a second or 4 MiB apart, on the pool.
    func progress(received: Int64, expected: Int64) async {
        let (download, save) = lock.withLock { state -> (QueuedDownload, Bool) in
            state.download.bytesReceived = received
            // The last report (the file is whole) is left to the transfer's outcome, which records the validator.
            let unsavedValidator = !state.validatorSaved && (expected == 0 || received < expected)
            let due = unsavedValidator || received - state.savedBytes >= 4 << 20
                || ContinuousClock.now - state.savedAt >= .seconds(1)
            if due {
                state.savedBytes = received
                state.savedAt = .now
                state.validatorSaved = true
            }
            return (state.download, due)
        }
        if save { await withTaskExecutorPreference(blocking) { [self] in self.save(download) } }
        observe(.progress(download.status, received: received, expected: expected))
    }
}
