import CCurl
import CHostSupport
import Foundation
import HostVocabulary
import Synchronization
import Vocabulary

/// The transfer thread: one thread owns libcurl's multi handle, and with it every transfer's socket. It waits in
/// `curl_multi_poll`, lets libcurl read what arrived (`curl_multi_perform`), which hands each response's head and
/// body to its `HTTPExchange` on this thread, and enforces the read timeouts. Nothing on it waits for anything but
/// the network: a body's bytes are copied into the page cache as they arrive, and what waits for the disk (the sync,
/// a truncation, hashing a resume's bytes) runs on the blocking pool (`BlockingPool`).
///
/// It is also a `TaskExecutor`: a transfer's task runs here until its body ends (`TransferClient.perform`), so
/// that a response's head, the task's verdict on it and the body's first bytes pass without a thread wake-up.
/// Jobs and calls posted from other threads wake it through `curl_multi_wakeup`.
///
/// Owner: the `TransferClient` that made it, which stops it (`shutdown`).
public final class TransferThread: TaskExecutor, @unchecked Sendable {
    private enum Work {
        case job(UnownedJob)
        case call(@Sendable () -> Void)
    }

    private struct Inbox {
        var work: [Work] = []
        /// The thread is in (or about to enter) `curl_multi_poll`: a post must wake it.
        var sleeping = false
        var stopping = false
        /// The thread has ended: a post is refused (its caller runs a job elsewhere, or ends an exchange itself).
        var ended = false
    }

    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    }()

    private let multi: UnsafeMutableRawPointer
    private let inbox = Mutex(Inbox())
    private let readTimeout: Duration
    private let ended = Mutex<CheckedContinuation<Void, Never>?>(nil)
    /// Easy handles of ended exchanges, reset, for the next: a handle's allocation and first set-up cost a small
    /// file more than its reset does.
    private let idleHandles = Mutex<[IdleHandle]>([])
    /// A handle no exchange holds: only the pool touches it.
    private struct IdleHandle: @unchecked Sendable {
        let easy: UnsafeMutableRawPointer
    }
    private static let idleHandlesKept = 64
    /// The exchanges libcurl runs. [transfer thread]
    private var running: [ObjectIdentifier: HTTPExchange] = [:]
    private var threadID: pthread_t?
    /// The kernel's news of links, addresses and routes (`NetworkPath`), or -1 without it. [transfer thread]
    private let networkChanges: Int32
    /// Told when the network changed, after the exchanges it broke were ended. [transfer thread]
    private let networkChanged: @Sendable () -> Void
    /// The most bytes a second this thread's exchanges may receive together (`--max-rate`), 0 for no limit: shared
    /// out evenly, and again whenever an exchange starts or ends. [transfer thread]
    private var rateLimit: Int64 = 0
    /// The limit each exchange was last given. [transfer thread]
    private var rateShares: (everyone: Int64, background: Int64) = (0, 0)
    /// This thread's part of the person's ceilings (`limitRates`): background exchanges together, all together.
    private var personBackgroundLimit: Int64 = 0
    private var personLimit: Int64 = 0
    /// Body bytes received since `rateSampledAt`, and the rate they made over the last second or more.
    let receivedBytes = Atomic<Int64>(0)
    let recentRate = Atomic<Int64>(0)
    private var rateSampledAt = ContinuousClock.now
    /// The local address each peer (a server or a proxy, by numeric address) was last connected from: a connection
    /// never answered from another address met a changed path, not a silent server. [transfer thread]
    private var reachedFrom: [String: String] = [:]
    private static let reachedFromKept = 1024

    /// Starts the thread.
    /// - Parameters:
    ///   - readTimeout: the longest a connected server may stay silent.
    ///   - networkChanged: told each time the kernel reports a change to links, addresses or routes.
    init(readTimeout: Duration, networkChanged: @escaping @Sendable () -> Void = {}) throws {
        guard Self.initialized, let multi = curl_multi_init() else {
            throw TransferError.permanent(-1, "libcurl could not be initialized")
        }
        self.multi = multi
        self.readTimeout = readTimeout
        self.networkChanged = networkChanged
        networkChanges = bahost_network_changes_open()
        // HTTP/2 streams to the same server share its connection (libcurl's default, said here since it is relied on).
        _ = bahost_curl_multi_set_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        let thread = Thread { [self] in
            bahost_name_thread("bahost-transfer")
            threadID = pthread_self()
            run()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// An easy handle for a new exchange: an idle one, else a new one. [any thread]
    func easyHandle() -> UnsafeMutableRawPointer? {
        idleHandles.withLock { $0.popLast()?.easy } ?? curl_easy_init()
    }

    /// Takes back the handle of an exchange that ended (out of the multi handle), reset to libcurl's defaults.
    /// [any thread]
    func recycle(_ easy: UnsafeMutableRawPointer) {
        curl_easy_reset(easy)
        let handle = IdleHandle(easy: easy)
        let kept = idleHandles.withLock { idle in
            guard idle.count < Self.idleHandlesKept else { return false }
            idle.append(handle)
            return true
        }
        if !kept { curl_easy_cleanup(easy) }
    }

    deinit {
        for handle in idleHandles.withLock({ $0 }) { curl_easy_cleanup(handle.easy) }
        if networkChanges >= 0 { close(networkChanges) }
    }

    /// Whether the caller runs on the transfer thread. [any thread]
    var isCurrent: Bool { threadID.map { pthread_equal($0, pthread_self()) != 0 } ?? false }

    /// [any thread]
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if !post(.job(job)) { globalConcurrentExecutor.enqueue(job) }
    }

    /// Runs `call` on the transfer thread, soon; false when the thread has ended (the call is dropped). [any thread]
    @discardableResult
    func post(_ call: @escaping @Sendable () -> Void) -> Bool { post(.call(call)) }

    private func post(_ work: Work) -> Bool {
        let (posted, wake) = inbox.withLock { inbox -> (Bool, Bool) in
            guard !inbox.ended else { return (false, false) }
            inbox.work.append(work)
            defer { inbox.sleeping = false }
            return (true, inbox.sleeping)
        }
        if wake { curl_multi_wakeup(multi) }
        return posted
    }

    /// The local address `peer` was last connected from, if it ever was. [transfer thread]
    func lastReachedFrom(_ peer: String) -> String? { reachedFrom[peer] }

    /// Remembers where an ending exchange's connection was made from, if it was made. [transfer thread]
    private func noteReached(_ exchange: HTTPExchange) {
        let local = exchange.localAddress
        guard !local.isEmpty else { return }
        if reachedFrom.count >= Self.reachedFromKept { reachedFrom.removeAll(keepingCapacity: true) }
        reachedFrom[exchange.peerAddress] = local
    }

    /// Hands `exchange` to libcurl. [transfer thread]
    func add(_ exchange: HTTPExchange) {
        running[ObjectIdentifier(exchange)] = exchange
        if limited { shareRate() }
        let code = curl_multi_add_handle(multi, exchange.easy)
        if code != CURLM_OK {
            running[ObjectIdentifier(exchange)] = nil
            exchange.ended(CurlFailure.of(CURLE_OUT_OF_MEMORY, detail: String(cString: curl_multi_strerror(code))))
        }
    }

    /// Stops `exchange` where it is, ending it with `failure`. [transfer thread]
    func abort(_ exchange: HTTPExchange, _ failure: TransferError) {
        guard running.removeValue(forKey: ObjectIdentifier(exchange)) != nil else { return }
        noteReached(exchange)
        curl_multi_remove_handle(multi, exchange.easy)
        if limited { shareRate() }
        exchange.ended(failure)
    }

    /// Ends each exchange that `conditions` hold back, keeping what it wrote. [transfer thread]
    func hold(by conditions: NetworkConditions) {
        for exchange in Array(running.values) {
            if let use = exchange.networkUse, let hold = conditions.hold(use) { abort(exchange, .held(hold)) }
        }
    }

    /// Sets the most bytes a second this thread's exchanges may receive together, 0 for no limit. [transfer thread]
    func limitRate(to bytesPerSecond: Int64) {
        rateLimit = max(0, bytesPerSecond)
        shareRate()
    }

    /// Sets this thread's part of the person's ceilings: its background exchanges together, and all of them
    /// together; 0 for none. [transfer thread]
    func limitRates(background: Int64, all: Int64) {
        personBackgroundLimit = max(0, background)
        personLimit = max(0, all)
        shareRate()
    }

    /// Whether any limit is set, so that an exchange's start or end shares them again.
    private var limited: Bool { rateLimit > 0 || personLimit > 0 || personBackgroundLimit > 0 }

    /// Gives each running exchange an even share of each limit that applies to it, the smallest, as the rate its
    /// body is paced at (`RatePacer`): every limit is shared by all exchanges but the background one, shared by the
    /// discretionary exchanges alone. [transfer thread]
    private func shareRate() {
        let count = Int64(max(1, running.count))
        let discretionary = Int64(max(1, running.values.filter { $0.networkUse?.discretionary == true }.count))
        func share(_ limit: Int64, _ among: Int64) -> Int64? { limit > 0 ? max(1, limit / among) : nil }
        let everyone = [share(rateLimit, count), share(personLimit, count)].compactMap { $0 }.min()
        let background = [everyone, share(personBackgroundLimit, discretionary)].compactMap { $0 }.min()
        let key = (everyone: everyone ?? 0, background: background ?? 0)
        guard key != rateShares || limited else { return }
        rateShares = key
        for exchange in running.values {
            exchange.paceRate = (exchange.networkUse?.discretionary == true ? background : everyone) ?? 0
        }
    }

    /// How often a yielding exchange's receive RTT is read.
    static let yieldSampling = Duration.milliseconds(20)

    /// Feeds the yielding exchanges' controllers, which set their windows; returns how long, in milliseconds, until
    /// the next sample is due (10 s when none yields). [transfer thread]
    private func controlYields() -> Int {
        let now = ContinuousClock.now
        var yielding = false
        for exchange in running.values where exchange.yields {
            yielding = true
            exchange.controlYield(now: now)
        }
        return yielding ? Int(Self.yieldSampling.inNanoseconds / 1_000_000) : 10_000
    }

    /// Measures the rate bodies arrive at, at most once a second (`recentRate`). [transfer thread]
    private func sampleRate() {
        let now = ContinuousClock.now
        let elapsed = now - rateSampledAt
        guard elapsed >= .seconds(1) || running.isEmpty else { return }
        let bytes = receivedBytes.exchange(0, ordering: .relaxed)
        recentRate.store(running.isEmpty ? 0 : Int64(Double(bytes) / max(elapsed.inSeconds, 0.001)), ordering: .relaxed)
        rateSampledAt = now
    }

    /// Offers again the parts the pace held whose time has come. [transfer thread]
    private func resumePaced() {
        let now = ContinuousClock.now
        for exchange in Array(running.values) {
            guard let until = exchange.pacedUntil, until <= now else { continue }
            exchange.paceElapsed()
            // libcurl offers the part it kept from within this call; the pacer takes it now, or holds it again.
            curl_easy_pause(exchange.easy, bahost_curl_pause_continue)
        }
    }

    /// How long, in milliseconds, until the pace lets the next held part go (10 s when none waits). [transfer thread]
    private func pacedWait() -> Int {
        let now = ContinuousClock.now
        let next = running.values.compactMap(\.pacedUntil).min()
        guard let next else { return 10_000 }
        return next <= now ? 0 : Int((next - now).inNanoseconds / 1_000_000) + 1
    }

    /// Lets a paused exchange's bytes flow again. [transfer thread]
    func resume(_ exchange: HTTPExchange) {
        guard running[ObjectIdentifier(exchange)] != nil else { return }
        curl_easy_pause(exchange.easy, bahost_curl_pause_continue)
    }

    /// Stops the thread once every exchange has ended, and waits for it. [any thread but the transfer thread]
    public func shutdown() async {
        await withCheckedContinuation { continuation in
            ended.withLock { $0 = continuation }
            if !post({ [self] in inbox.withLock { $0.stopping = true } }) { takeEnded()?.resume() }
        }
    }

    /// The continuation `shutdown` waits on, taken once: the thread's end and a late `shutdown` may both reach it.
    private func takeEnded() -> CheckedContinuation<Void, Never>? {
        ended.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
    }

    // MARK: The loop [transfer thread]

    private func run() {
        var stillRunning: Int32 = 0
        while true {
            let work = inbox.withLock { inbox in
                defer { inbox.work.removeAll(keepingCapacity: true) }
                return inbox.work
            }
            for item in work {
                switch item {
                case .job(let job): job.runSynchronously(on: asUnownedTaskExecutor())
                case .call(let call): call()
                }
            }
            if inbox.withLock({ $0.stopping }) {
                for exchange in Array(running.values) {
                    abort(exchange, CurlFailure.of(CURLE_ABORTED_BY_CALLBACK))
                }
                // Ended in the same step as the inbox is found empty: a later post is refused (an exchange then ends
                // itself; a job goes to the global executor), never left behind.
                let done = inbox.withLock { inbox -> Bool in
                    guard inbox.work.isEmpty else { return false }
                    inbox.ended = true
                    return true
                }
                if done { break }
            }
            resumePaced()
            curl_multi_perform(multi, &stillRunning)
            finishDone()
            sampleRate()
            let wait = min(enforceReadTimeouts(), controlYields(), pacedWait())
            var curlWait = 0
            curl_multi_timeout(multi, &curlWait)
            let timeout = Int32(clamping: curlWait < 0 ? wait : min(curlWait, wait))
            let sleep = inbox.withLock { inbox -> Bool in
                inbox.sleeping = inbox.work.isEmpty
                return inbox.sleeping
            }
            var changes = curl_waitfd(fd: networkChanges, events: Int16(CURL_WAIT_POLLIN), revents: 0)
            if sleep && timeout > 0 {
                if networkChanges >= 0 {
                    curl_multi_poll(multi, &changes, 1, timeout, nil)
                } else {
                    curl_multi_poll(multi, nil, 0, timeout, nil)
                }
            }
            inbox.withLock { $0.sleeping = false }
            if changes.revents != 0 && bahost_network_changes_drain(networkChanges) > 0 { networkDidChange() }
        }
        curl_multi_cleanup(multi)
        takeEnded()?.resume()
    }

    /// Ends the exchanges the change broke or may have moved (`HTTPExchange.afterChange`) at once, rather than after
    /// a timeout begun on the old path, then says so.
    private func networkDidChange() {
        let now = ContinuousClock.now
        for exchange in Array(running.values) {
            if let ending = exchange.afterChange(now: now) { abort(exchange, ending) }
        }
        networkChanged()
    }

    /// Ends the exchanges libcurl has finished.
    private func finishDone() {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                let context = bahost_curl_info_private(easy)
            else { continue }
            let exchange = Unmanaged<HTTPExchange>.fromOpaque(context).takeUnretainedValue()
            let code = message.pointee.data.result
            guard running.removeValue(forKey: ObjectIdentifier(exchange)) != nil else { continue }
            curl_multi_remove_handle(multi, easy)
            if limited { shareRate() }
            exchange.finished(code)
            noteReached(exchange)
        }
    }

    /// Gives up the exchanges whose connected server has been silent past the read timeout; returns how long, in
    /// milliseconds, until the next one may be due (at most 10 s).
    private func enforceReadTimeouts() -> Int {
        var next = Duration.seconds(10)
        guard !running.isEmpty else { return 10_000 }
        let now = ContinuousClock.now
        for exchange in Array(running.values) {
            guard let since = exchange.silentSince else { continue }
            let silent = now - since
            if silent >= readTimeout && exchange.isEstablished {
                abort(exchange, TransferError(
                    .transient, code: CurlFailure.timedOut, domain: TransferError.urlDomain,
                    message: "the server stopped sending: nothing for \(readTimeout.tenths) s"))
            } else {
                next = min(next, max(.milliseconds(1), readTimeout - silent))
            }
        }
        return Int(next.inNanoseconds / 1_000_000) + 1
    }
}

extension Duration {
    /// "1.5", "0.3": a duration in seconds to a tenth, for a message.
    var tenths: String { String(format: "%.1f", inSeconds) }
}
