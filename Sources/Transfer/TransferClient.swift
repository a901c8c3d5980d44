import CCurl
import Crypto
import Foundation
import HostVocabulary
import Synchronization

/// How the host's HTTP client behaves.
public struct TransferConfiguration: Sendable {
    /// A PEM file of certificate authorities trusted besides the system's (private CDNs, tests).
    public var additionalCAFile: String?
    public var connectTimeout: Duration
    /// The longest a connected server may stay silent (before its head, or in the middle of a body) before the
    /// attempt is given up, as a timeout, which is transient: the retry resumes. The transfer thread measures it;
    /// time the host itself holds a response (its head not yet judged) does not count.
    public var readTimeout: Duration
    /// The least a body must bring in over a stretch of time (`MinimumRate`).
    public var minimumRate: MinimumRate
    public var maximumRedirects: Int
    /// The transfer threads, each with its own libcurl multi handle, that read the responses and write their bodies
    /// (and, over TLS, decrypt them). One by default: one thread copies many transfers' bytes into the page cache,
    /// and a second costs more wake-ups than it saves. More for many fast TLS transfers.
    public var transferThreads: Int
    /// The most a transfer of a large body (declared at `largeBody` or more) reads from its socket in one go
    /// (`CURLOPT_BUFFERSIZE`): fewer, larger writes. A smaller body keeps libcurl's 16 KiB: every running transfer
    /// holds its buffer, which counts in the host's resident memory (docs/performance/DECISIONS.md #26).
    public var receiveBufferSize: Int = 128 << 10
    public var largeBody: Int64 = 1 << 20
    /// The proxies to follow (the host's environment, else the desktop's settings).
    public var proxies: ProxySettings = .fromProcess

    /// The system's certificate authorities, as a folder of hashed links (Debian's `ca-certificates`): trusted
    /// besides `additionalCAFile`.
    static let systemCertificates = "/etc/ssl/certs"

    public init(
        additionalCAFile: String? = nil, connectTimeout: Duration = .seconds(10), readTimeout: Duration = .seconds(30),
        minimumRate: MinimumRate = .default, maximumRedirects: Int = 10, transferThreads: Int = 1
    ) {
        self.additionalCAFile = additionalCAFile
        self.connectTimeout = connectTimeout
        self.readTimeout = readTimeout
        self.minimumRate = minimumRate
        self.maximumRedirects = maximumRedirects
        self.transferThreads = transferThreads
    }
}

/// The slowest a body may arrive: at least `bytes` in every `window`, or the attempt is given up as timed out
/// (transient: the retry resumes, after a backoff that frees the transfer's slot). The read timeout alone let a
/// server that sends a byte just within it hold a slot for ever, and with the global limit every other app's
/// downloads (curl's `--speed-limit` and `--speed-time` do the same).
public struct MinimumRate: Sendable, Hashable {
    public var bytes: Int64
    public var window: Duration

    public init(bytes: Int64, window: Duration) {
        self.bytes = bytes
        self.window = window
    }

    /// 64 KiB a minute: a link a thousand times slower than a poor mobile one still passes.
    public static let `default` = MinimumRate(bytes: 64 << 10, window: .seconds(60))
}

/// What the bytes already in a partial file were: resumes send it in `If-Range`.
public struct Validator: Sendable, Hashable, Codable {
    public var etag: String?
    public var lastModified: String?

    public init(etag: String?, lastModified: String?) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// Only a strong ETag, or else a Last-Modified date, can validate a range.
    var ifRange: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }
}

/// One download to perform into a partial file.
public struct TransferRequest: Sendable {
    public var url: String
    /// `Name: value` request headers.
    public var headers: [String]
    /// Exact bytes expected, enforced (an essential download's promise, or a pack's size); 0 when not promised.
    public var expectedSize: Int64
    /// The size the download declared without promising it (Apple: `fileSize` binds essential downloads only): what
    /// progress reports until the server says the real one. 0 when none.
    public var sizeHint: Int64
    /// Expected SHA-256 in hex, or nil.
    public var sha256: String?
    /// Where the bytes go. What is already there is resumed when `validator` says what it is.
    public var partialPath: String
    public var validator: Validator?
    /// The most bytes this transfer may receive in all (an allowance), or nil.
    public var byteLimit: Int64?
    /// Vets the URL and every redirect hop before anything is requested from it.
    public var checkURL: @Sendable (String) -> TransferError?
    /// HTTP Basic credentials, sent to their host only.
    public var credential: Credential?
    /// A background transfer: it yields to the machine's other traffic (`YieldController`), receiving only what the
    /// link leaves idle, when its body is large (`TransferConfiguration.largeBody`: a small one ends before a
    /// controller could act). An essential or foreground download does not.
    public var yields = false
    /// How the download uses the network: the machine's conditions may hold it back (`apply`). Nil: never held.
    public var networkUse: NetworkUse?

    public init(
        url: String, headers: [String] = [], expectedSize: Int64, sizeHint: Int64 = 0, sha256: String? = nil,
        partialPath: String, validator: Validator? = nil, byteLimit: Int64? = nil, credential: Credential? = nil,
        checkURL: @escaping @Sendable (String) -> TransferError?
    ) {
        self.url = url
        self.headers = headers
        self.expectedSize = expectedSize
        self.sizeHint = sizeHint
        self.sha256 = sha256
        self.partialPath = partialPath
        self.validator = validator
        self.byteLimit = byteLimit
        self.credential = credential
        self.checkURL = checkURL
    }
}

/// What a transfer reports while it runs. Called on the transfer's task, in order, but for `bodyEnded`: until the
/// body ends, on the transfer thread that reads the response, so what waits for the disk or the queue hops
/// elsewhere and is awaited; the last progress on `blocking`.
public protocol TransferObserver: Sendable {
    /// The server answered; `validator` identifies the bytes about to be written (store it before they are).
    func began(validator: Validator, resumingAt offset: Int64) async
    /// `received` bytes of the file are now in the partial file.
    func progress(received: Int64, expected: Int64) async
    /// The body ended and the connection is free; the file is still to be synced and verified. Called on the
    /// transfer thread, the moment it happens: it must not block.
    func bodyEnded()
}

extension TransferObserver {
    public func bodyEnded() {}
}

/// Performs transfers on libcurl's multi interface (`TransferThread`): streams each body to disk, resumes with
/// `Range` and `If-Range`, follows redirects itself so that every hop is vetted, and verifies size and SHA-256.
/// Knows nothing about extensions or queues: one call, one attempt.
public final class TransferClient: Sendable {
    private let threads: [TransferThread]
    private let nextThread = Atomic<Int>(0)
    private let configuration: TransferConfiguration
    private let desktopProxies = DesktopProxies()
    private let networkChangeHandler = NetworkChangeHandler()
    private final class NetworkChangeHandler: Sendable {
        let handler = Mutex<(@Sendable () -> Void)?>(nil)
        func callAsFunction() { handler.withLock { $0 }?() }
    }

    public init(_ configuration: TransferConfiguration) throws {
        let handler = networkChangeHandler
        threads = try (0..<max(1, configuration.transferThreads)).map { _ in
            try TransferThread(readTimeout: configuration.readTimeout) { handler() }
        }
        self.configuration = configuration
    }

    /// The most bytes a second all transfers may receive together (`--max-rate`, `bahost debug max-rate`), nil for
    /// no limit: each transfer thread gets an even part, which it shares between its transfers.
    public var maximumRate: Int64? {
        let rate = rateLimit.load(ordering: .relaxed)
        return rate > 0 ? rate : nil
    }
    private let rateLimit = Atomic<Int64>(0)

    /// Sets `maximumRate`, for the transfers running and those to come. [any thread]
    public func limitRate(to bytesPerSecond: Int64?) {
        let rate = max(0, bytesPerSecond ?? 0)
        rateLimit.store(rate, ordering: .relaxed)
        let part = rate == 0 ? 0 : max(1, rate / Int64(threads.count))
        for thread in threads { thread.post { thread.limitRate(to: part) } }
    }

    /// The person's ceilings (`bahost settings`: `rate.background`, `rate.all`, and those of a schedule or a game),
    /// beside `maximumRate`: each transfer thread gets an even part of each.
    public var rateCeilings: RateCeilings { ceilings.withLock { $0 } }
    private let ceilings = Mutex(RateCeilings())

    /// Sets `rateCeilings`, for the transfers running and those to come. [any thread]
    public func limitRates(_ new: RateCeilings) {
        ceilings.withLock { $0 = new }
        func part(_ rate: Int64?) -> Int64 { rate.map { max(1, $0 / Int64(threads.count)) } ?? 0 }
        let (background, all) = (part(new.background), part(new.all))
        for thread in threads { thread.post { thread.limitRates(background: background, all: all) } }
    }

    /// The free space each download must leave on its volume (the person's `storage.*` settings); nil for none
    /// beyond the margin every download keeps.
    public var storageFloor: StorageFloor? {
        get { floorSetting.withLock { $0 } }
        set { floorSetting.withLock { $0 = newValue } }
    }
    private let floorSetting = Mutex<StorageFloor?>(nil)

    /// The bytes a second the transfers received together over the last second or so. [any thread]
    public var currentRate: Int64 { threads.reduce(0) { $0 + $1.recentRate.load(ordering: .relaxed) } }

    /// The proxies the transfers follow.
    public var proxies: ProxySettings { configuration.proxies }

    /// What the machine last said of its network (`apply`).
    private let conditions = Mutex(NetworkConditions())

    /// Takes what the machine says of its network: each running transfer they hold back ends at once with a `held`
    /// failure (its bytes kept), and none they hold starts a request until they change. [any thread]
    public func apply(_ conditions: NetworkConditions) {
        self.conditions.withLock { $0 = conditions }
        guard conditions.holdsAny else { return }
        for thread in threads { thread.post { thread.hold(by: conditions) } }
    }

    /// The most one download that uses the network as `use` does may receive now, alone: the person's ceilings
    /// (a discretionary one's and every download's) and `maximumRate`; nil for no limit. For what the transfer
    /// threads do not carry (a swarm), which has the whole of each ceiling. [any thread]
    public func ceiling(_ use: NetworkUse?) -> Int64? {
        let ceilings = rateCeilings
        let discretionary = use?.discretionary ?? false
        return [discretionary ? ceilings.background : nil, ceilings.all, maximumRate].compactMap { $0 }.min()
    }

    /// What holds a transfer that uses the network as `use` does, now (nil: nothing, or no `use`). [any thread]
    public func hold(_ use: NetworkUse?) -> NetworkConditions.Hold? {
        guard let use else { return nil }
        return conditions.withLock { $0.holdsAny ? $0.hold(use) : nil }
    }

    /// Whether a request to `url` would go through a proxy: the environment's or the desktop's (libproxy, which may
    /// wait: asked on `blocking`).
    public func goesThroughProxy(_ url: String, blocking: (any TaskExecutor)?) async -> Bool {
        await proxyRoute(for: url, blocking: blocking).proxy != nil
    }

    /// Has `handler` told each time the kernel reports a change to the network (links, addresses, routes), once the
    /// transfers whose path it broke have ended (each with an offline `.network` failure). Called on a transfer
    /// thread (each thread hears each change): it must not block. [any thread]
    public func onNetworkChange(_ handler: @escaping @Sendable () -> Void) {
        networkChangeHandler.handler.withLock { $0 = handler }
    }

    /// Stops the transfer threads, once what runs on them has ended. [any thread but a transfer thread]
    public func shutdown() async throws {
        for thread in threads { await thread.shutdown() }
    }

    /// The transfer thread a new transfer's task should run on: the caller's, when it runs on one (a freed slot
    /// starting the next transfer), else the next in turn. [any thread]
    public var transferExecutor: any TaskExecutor { thread() }

    private func thread() -> TransferThread {
        threads.first(where: \.isCurrent)
            ?? threads[nextThread.wrappingAdd(1, ordering: .relaxed).oldValue % threads.count]
    }

    /// Runs one attempt. On success the partial file holds exactly the verified file. On a transient failure the
    /// partial file keeps what arrived (to resume); on a permanent one it is deleted.
    public func perform(_ request: TransferRequest, observer: TransferObserver) async -> Result<Int64, TransferError> {
        await perform(request, observer: observer, blocking: nil) { $0 }
    }

    /// Runs one attempt, as `perform(_:observer:)`, and hands its result to `finish`.
    ///
    /// The request, its head and its body run on a transfer thread, the caller's when it runs on one, so that
    /// nothing crosses threads from the request to the body's last byte. What waits for the disk (the bytes of a
    /// resume hashed, a truncation, the sync, the verification) runs on `blocking`, and so does `finish`, which the
    /// caller's own disk work then follows without another hop. Nil: the caller's executor.
    public func perform<Finished: Sendable>(
        _ request: TransferRequest, observer: TransferObserver, blocking: (any TaskExecutor)?,
        finish: (Result<Int64, TransferError>) async -> Finished
    ) async -> Finished {
        let thread = thread()
        let (file, ending) = await withTaskExecutorPreference(thread) {
            await receive(request, on: thread, observer: observer, blocking: blocking)
        }
        return await withTaskExecutorPreference(blocking) {
            var file = file
            let result = await settle(request, &file, ending, observer: observer)
            file?.close()
            if case .failure(let error) = result, error.kind == .permanent { unlink(request.partialPath) }
            return await finish(result)
        }
    }

    /// How the network's part of an attempt ended; what is left waits for the disk (`settle`).
    private enum Ending {
        /// The file was whole before anything was asked: verify it.
        case verify
        /// The body ended whole: sync, report and verify. `expected` is what progress counted against.
        case body(expected: Int64)
        /// The body stopped with this failure: sync what arrived (it is resumed from), then fail.
        case bodyFailed(TransferError)
        /// Nothing of a body was written.
        case failed(TransferError)
    }

    /// The disk's part of an attempt: on `blocking`.
    private func settle(
        _ request: TransferRequest, _ file: inout PartialFile?, _ ending: Ending, observer: TransferObserver
    ) async -> Result<Int64, TransferError> {
        switch ending {
        case .failed(let error):
            return .failure(error)
        case .verify:
            return verify(request, file: file!)
        case .bodyFailed(let error):
            if let syncFailure = file!.sync() { return .failure(syncFailure) }
            return .failure(error)
        case .body(let expected):
            if let syncFailure = file!.sync() { return .failure(syncFailure) }
            await observer.progress(received: file!.length, expected: max(expected, file!.length))
            return verify(request, file: file!)
        }
    }

    /// The network's part of an attempt, on `thread`: the partial file opened, then each request (redirects vetted
    /// and followed, a mismatched resume started again) until one's body ends or the attempt fails.
    private func receive(
        _ request: TransferRequest, on thread: TransferThread, observer: TransferObserver,
        blocking: (any TaskExecutor)?
    ) async -> (PartialFile?, Ending) {
        var file: PartialFile
        do {
            file = try PartialFile(path: request.partialPath)
        } catch {
            return (nil, .failed(error))
        }
        // Bytes without a validator, or more bytes than the file has, cannot be resumed.
        if file.length > 0 && (request.validator?.ifRange == nil
            || (request.expectedSize > 0 && file.length > request.expectedSize))
        {
            if let error = await truncate(&file, blocking) { return (file, .failed(error)) }
        }
        if request.expectedSize > 0 && file.length == request.expectedSize { return (file, .verify) }
        if let error = Self.checkFreeSpace(for: request, file: &file, floor: storageFloor) {
            return (file, .failed(error))
        }

        var url = request.url
        var redirects = 0
        var restarts = 0
        while true {
            if let refusal = request.checkURL(url) { return (file, .failed(refusal)) }
            if let hold = hold(request.networkUse) {
                return (file, .failed(.held(hold)))
            }
            let offset = file.length
            let route = await proxyRoute(for: url, blocking: blocking)
            let exchange: HTTPExchange
            do {
                let lines = try request.headerLines(url: url, offset: offset)
                let large = max(request.expectedSize, request.sizeHint) >= configuration.largeBody
                exchange = try HTTPExchange(
                    .init(
                        url: url, headerLines: lines, configuration: configuration, proxy: route, largeBody: large,
                        yields: request.yields && large, networkUse: request.networkUse),
                    on: thread
                ) { observer.bodyEnded() }
            } catch {
                return (file, .failed(error))
            }
            let outcome = await withTaskCancellationHandler {
                await respond(
                    to: request, url: url, offset: offset, exchange: exchange, file: &file, observer: observer,
                    blocking: blocking)
            } onCancel: {
                exchange.cancel()
            }
            switch outcome {
            case .redirect(let next):
                redirects += 1
                guard redirects <= configuration.maximumRedirects else {
                    return (file, .failed(TransferError(
                        .permanent, code: TransferError.tooManyRedirects, domain: TransferError.urlDomain,
                        message: "more than \(configuration.maximumRedirects) redirects")))
                }
                url = next
            case .restart(let giveUp):
                // Start the file again, twice at most.
                restarts += 1
                guard restarts <= 2 else { return (file, .failed(giveUp)) }
                if let error = await truncate(&file, blocking) { return (file, .failed(error)) }
            case .ended(let ending):
                return (file, ending)
            }
        }
    }

    /// The proxy for a request to `url`: the environment's, or the desktop's answer for its origin, at once; libproxy
    /// is asked on `blocking` (a task of its own without one) only when no answer is known, since it may wait.
    private func proxyRoute(for url: String, blocking: (any TaskExecutor)?) async -> ProxyRoute {
        if let route = configuration.proxies.environmentRoute(for: url) { return route }
        if let known = desktopProxies.known(url) { return known }
        let desktop = desktopProxies
        // Off the transfer thread: libproxy may read files or ask the network (PAC).
        return await withTaskExecutorPreference(blocking ?? globalConcurrentExecutor) { desktop.ask(url) }
    }

    /// Empties the partial file, on `blocking` (freeing a large file's blocks waits for the disk).
    private func truncate(_ file: inout PartialFile, _ blocking: (any TaskExecutor)?) async -> TransferError? {
        let (truncated, error) = await withTaskExecutorPreference(blocking) { [file] in
            var truncated = file
            let error = truncated.truncate()
            return (truncated, error)
        }
        file = truncated
        return error
    }

    /// What became of one request: another to make, or the attempt's network part done.
    private enum Response {
        case redirect(String)
        case restart(giveUp: TransferError)
        case ended(Ending)
    }

    /// One request's response: its head judged by `ResponseVerdict`, then, for a body, the body written by the
    /// transfer thread (`HTTPExchange`) while this task waits for its end, reporting progress as the exchange does.
    private func respond(
        to request: TransferRequest, url: String, offset: Int64, exchange: HTTPExchange, file: inout PartialFile,
        observer: TransferObserver, blocking: (any TaskExecutor)?
    ) async -> Response {
        var events = exchange.events.makeAsyncIterator()
        let first = await events.next()
        guard case .head(let status, let headers)? = first else {
            if case .ended(let failure?)? = first { return .ended(.failed(failure)) }
            return .ended(.failed(CurlFailure.of(CURLE_ABORTED_BY_CALLBACK)))
        }
        let start: Int64
        let validator: Validator
        switch ResponseVerdict.of(status: status, headers: headers, url: url, offset: offset, request: request) {
        case .body(let bodyStart, let bodyValidator):
            (start, validator) = (bodyStart, bodyValidator)
        case .redirect(let next):
            exchange.discard()
            return .redirect(next)
        case .restart(let giveUp):
            exchange.discard()
            return .restart(giveUp: giveUp)
        case .fail(let error):
            exchange.discard()
            return .ended(.failed(error))
        }
        if start == 0 && file.length > 0, let error = await truncate(&file, blocking) {
            exchange.discard()
            return .ended(.failed(error))
        }
        if request.sha256 != nil {
            // A resume's bytes are read to be hashed: on `blocking`.
            let (hashing, error) = await withTaskExecutorPreference(file.length > 0 ? blocking : nil) { [file] in
                var hashing = file
                let error = hashing.startHashing()
                return (hashing, error)
            }
            file = hashing
            if let error {
                exchange.discard()
                return .ended(.failed(error))
            }
        }
        await observer.began(validator: validator, resumingAt: start)
        // Progress counts against the promised size, else what the server says the file is, else the hint.
        let expected = request.expectedSize > 0
            ? request.expectedSize
            : ResponseVerdict.announcedSize(headers: headers, start: start) ?? request.sizeHint
        var failure = exchange.writeBody(
            into: file, bounds: .init(expectedSize: request.expectedSize, byteLimit: request.byteLimit))
        if failure != nil { exchange.discard() }
        var ended = false
        while let event = await events.next() {
            switch event {
            case .head:
                break
            case .progress(let received):
                await observer.progress(received: received, expected: expected)
            case .ended(let ending):
                ended = true
                failure = failure ?? ending
            }
        }
        // The stream also stops when this task is cancelled (the request is cancelled with it).
        if !ended { failure = failure ?? CurlFailure.of(CURLE_ABORTED_BY_CALLBACK) }
        if let lent = exchange.returnFile() { file = lent }
        // What arrived is made durable either way (`settle`): a failed body is resumed from it.
        if let failure { return .ended(.bodyFailed(failure)) }
        return .ended(.body(expected: expected))
    }

    /// Size and checksum of a complete partial file; a mismatch is permanent.
    private func verify(_ request: TransferRequest, file: PartialFile) -> Result<Int64, TransferError> {
        if request.expectedSize > 0 && file.length != request.expectedSize {
            // The body ended early without an error: resume what is missing.
            return .failure(TransferError(
                .transient, code: -1005, domain: TransferError.urlDomain,
                message: "the response ended after \(file.length) of \(request.expectedSize) bytes"))
        }
        if let expected = request.sha256?.lowercased() {
            switch file.sha256() {
            case .success(let actual) where actual == expected:
                break
            case .success(let actual):
                return .failure(.permanent(
                    TransferError.checksumMismatch, "the file's SHA-256 is \(actual), not the declared \(expected)"))
            case .failure(let error):
                return .failure(error)
            }
        }
        return .success(file.length)
    }

    /// Refuses to start when the disk cannot hold what is left to receive (plus a margin for everything else). Asked
    /// of the open file, not of its folder's path: a path's walk, and the folder's name cut from it, cost every small
    /// file more than the answer (docs/performance/DECISIONS.md #14).
    /// With a storage floor (the person's settings), what is left to receive must also leave the floor free: a
    /// discretionary download waits for space, any other fails, naming the space needed and the volume.
    static func checkFreeSpace(
        for request: TransferRequest, file: inout PartialFile, floor: StorageFloor?
    ) -> TransferError? {
        guard let (free, size) = file.volumeSpace() else { return nil }
        let kept = floor?.bytes(onVolumeOf: size) ?? 0
        let waits = request.networkUse?.discretionary == true
        file.floor = (kept, waits)
        // With a floor, a declared size counts too (what the download says it will write).
        let declared = floor == nil ? request.expectedSize : max(request.expectedSize, request.sizeHint)
        let remaining = max(0, declared - file.length)
        let path = request.partialPath
        let folder = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[..<$0]) } ?? "."
        return spaceFailure(free: free, kept: kept, remaining: remaining, folder: folder, waits: waits)
    }

    /// Whether `bytes` more may be written in `folder` beside the person's storage floor, as a transfer checks before
    /// its request (a swarm's file, which no transfer writes): nil, or the failure to record (one that `use` makes
    /// discretionary waits for space). [blocking pool: it asks the file system]
    public func spaceProblem(writing bytes: Int64, in folder: String, use: NetworkUse?) -> TransferError? {
        var stats = statvfs()
        guard statvfs(folder, &stats) == 0 else { return nil }
        let free = Int64(stats.f_bavail) * Int64(stats.f_frsize)
        let size = Int64(stats.f_blocks) * Int64(stats.f_frsize)
        let kept = storageFloor?.bytes(onVolumeOf: size) ?? 0
        return Self.spaceFailure(
            free: free, kept: kept, remaining: max(0, bytes), folder: folder, waits: use?.discretionary == true)
    }

    private static func spaceFailure(
        free: Int64, kept: Int64, remaining: Int64, folder: String, waits: Bool
    ) -> TransferError? {
        let needed = remaining + max(16 << 20, kept)
        guard free < needed else { return nil }
        let message = kept > 0
            ? "not enough free space on the volume of \(folder): \(needed) bytes needed (\(remaining) to receive and the "
                + "storage floor of \(kept)), \(free) available"
            : "not enough free space in \(folder): \(needed) bytes needed, \(free) available"
        return waits ? .waitForSpace(message) : .permanent(TransferError.insufficientSpace, message)
    }
}
