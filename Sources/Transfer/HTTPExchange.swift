import CCurl
import CHostSupport
import Foundation
import HostVocabulary
import Synchronization
import Vocabulary

/// One request of a transfer attempt and its response, on a libcurl easy handle that the transfer thread runs: the
/// head is collected and handed to the transfer's task (`events`), and the body goes into the partial file on the
/// transfer thread as it arrives, once the task has judged the head and lent the file (`writeBody`).
///
/// Sequence: `.head` first; the task judges it and either lends the file (`writeBody`) or refuses the body
/// (`discard`); `.ended` comes last, once, after which `returnFile` gives the file back (a cancelled task takes it
/// back without waiting: what arrives after is dropped, and the abort follows). What arrives before the task
/// has judged the head is kept in memory (up to `heldBytesLimit`; past it the transfer pauses): a connection that
/// breaks meanwhile still leaves those bytes to write and resume from.
///
/// The response's progress is one `Phase`, whose cases carry what is valid in them; every field that changes is in
/// `State`, under its one lock, the transfer thread's own (`Pace`) included.
///
/// Threads: the callbacks, `finished` and `ended` run on the transfer thread; `writeBody`, `discard` and
/// `returnFile` on any (the task's, which is normally the transfer thread too).
final class HTTPExchange: Sendable {
    enum Event: Sendable {
        case head(status: Int, headers: ResponseHeaders)
        /// The file now holds this many bytes.
        case progress(Int64)
        /// The response ended: whole (nil), or with this failure (the request's, or the file's).
        case ended(TransferError?)
    }

    /// Limits the body must keep, checked before each part is written.
    struct Bounds: Sendable {
        /// Exact bytes the file may reach (a promised size), or 0.
        var expectedSize: Int64
        var byteLimit: Int64?
    }

    /// What one exchange is asked to do.
    struct Request {
        var url: String
        var headerLines: [String]
        var configuration: TransferConfiguration
        var proxy: ProxyRoute = .direct
        /// Whether the body is declared large: it then gets `configuration.receiveBufferSize`.
        var largeBody = false
        var progressInterval: Duration = .milliseconds(100)
        /// Whether the transfer yields to the machine's other traffic (`YieldController`).
        var yields = false
        /// How the download uses the network, for the machine's conditions to judge (`TransferThread.hold`).
        var networkUse: NetworkUse?
    }

    /// The most body bytes held in memory while the task judges the head.
    static let heldBytesLimit = 1 << 20
    /// The most bytes of a response's head read (status line and fields, every interim response's included): a
    /// server that sends more is refused, as browsers and libcurl's later versions do.
    static let maximumHeadBytes = 256 << 10
    /// The most body bytes of a refused response (a redirect's) read to keep its connection for the next request;
    /// past it the connection is closed.
    static let discardedBytesLimit = 64 << 10

    /// Where the response is, each case with only what is valid in it. The head is read (`awaitingHead`), then held
    /// for the task's judgment with the body's first bytes (`holding`), then the body goes into the lent file
    /// (`writing`) or is dropped (`discarding`), and the file is given back (`returned`).
    enum Phase {
        /// The head is being read: its fields so far (an interim response's are dropped at its blank line).
        case awaitingHead(ResponseHeaders)
        /// The head came and waits for the task's judgment; the body's first bytes are held meanwhile. `paused` once
        /// they reached `heldBytesLimit` (libcurl keeps the next part); `whole` once libcurl ended the response whole
        /// with all of its body held.
        case holding(held: [UInt8], paused: Bool, whole: Bool)
        /// The body goes into the file the task lent.
        case writing(Body)
        /// The body was refused: up to `discardedBytesLimit` of it read and dropped, then the connection closed.
        case discarding(bytes: Int)
        /// The task took its file back (cancelled, or after the end): what arrives is refused.
        case returned
    }

    /// The body being written, within its bounds and at the minimum rate.
    struct Body {
        var file: PartialFile
        var bounds: Bounds
        var lastReport: ContinuousClock.Instant
        /// Where the current stretch of `MinimumRate` began (the file lent at first), and the bytes it has brought.
        var stretchStart: ContinuousClock.Instant
        var stretchBytes: Int64 = 0

        /// Counts `count` bytes that arrived `now` toward the minimum rate; why not, when the stretch that ends
        /// with them brought too little.
        mutating func keepsUp(_ count: Int, now: ContinuousClock.Instant, _ rate: MinimumRate) -> TransferError? {
            stretchBytes += Int64(count)
            guard now - stretchStart >= rate.window else { return nil }
            guard stretchBytes >= rate.bytes else {
                return TransferError(
                    .transient, code: CurlFailure.timedOut, domain: TransferError.urlDomain,
                    message: "the server sent \(stretchBytes) bytes in \((now - stretchStart).tenths) s; a transfer "
                        + "must bring at least \(rate.bytes) bytes every \(rate.window.tenths) s")
            }
            stretchStart = now
            stretchBytes = 0
            return nil
        }

        /// Writes one part within the bounds; why not, when it cannot.
        mutating func write(_ bytes: UnsafeRawBufferPointer) -> TransferError? {
            let after = file.length + Int64(bytes.count)
            if bounds.expectedSize > 0 && after > bounds.expectedSize {
                return .permanent(
                    TransferError.sizeMismatch, "the server sent more than the declared \(bounds.expectedSize) bytes")
            }
            if let limit = bounds.byteLimit, after > limit {
                return .permanent(TransferError.byteLimitExceeded, "the transfer passed its limit of \(limit) bytes")
            }
            return file.append(bytes)
        }
    }

    /// What the transfer thread alone sets and reads: the body's pace, and a background exchange's yield.
    struct Pace {
        /// The most bytes a second the body may arrive at (its share of the ceilings: `TransferThread.shareRate`),
        /// 0 for none; its pacer; and, while a part waits for the pace, when to offer it again.
        var rate: Int64 = 0
        var pacer = RatePacer()
        var until: ContinuousClock.Instant?
        /// A background transfer's controller, and when it was last fed.
        var yielding: YieldController?
        var sampledAt = ContinuousClock.now
        /// The socket of a yielding exchange's connection (a fresh one, so that it is known), -1 before it is opened.
        var socket: Int32 = -1
        var peerChecked = false
    }

    private struct State {
        var phase = Phase.awaitingHead(ResponseHeaders())
        /// Head bytes read, interim responses' and trailers' included.
        var headBytes = 0
        /// The last bytes from the server (a held head's silence is the host's: `silentSince`).
        var lastHeard = ContinuousClock.now
        /// Why the body was refused while it arrived (a bound passed, a failed write, too slow): reported as the end.
        var refusal: TransferError?
        /// Whether the end was reported (once). Not a phase: the task may judge a head after the response ended,
        /// and the bytes held are then still written, to resume from.
        var endReported = false
        var pace = Pace()

        /// Holds a part of the body while the head waits for its judgment; false, pausing, past `heldBytesLimit`.
        mutating func hold(_ bytes: UnsafeRawBufferPointer) -> Bool {
            guard case .holding(var held, let paused, let whole) = phase else { return false }
            guard held.count + bytes.count <= HTTPExchange.heldBytesLimit else {
                phase = .holding(held: held, paused: true, whole: whole)
                return false
            }
            phase = .returned  // the bytes' one owner while they grow: no copy
            held.append(contentsOf: bytes)
            phase = .holding(held: held, paused: paused, whole: whole)
            return true
        }
    }

    let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let state = Mutex(State())
    private let thread: TransferThread
    private let minimumRate: MinimumRate
    /// The proxy the request goes through, if any: its failures name it (without its credentials).
    private let proxy: ProxyURL?
    private let progressInterval: Duration
    /// Called the moment the body has ended whole, before the task hears of it. [transfer thread, or the task's]
    private let bodyEnded: @Sendable () -> Void
    /// libcurl's handle, its header list and its error buffer: made here, then the transfer thread's alone (which is
    /// why these pointers, not `Sendable`, are `nonisolated(unsafe)`).
    nonisolated(unsafe) let easy: UnsafeMutableRawPointer
    nonisolated(unsafe) private let headerList: UnsafeMutablePointer<curl_slist>?
    nonisolated(unsafe) private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(
        capacity: Int(CURL_ERROR_SIZE) + 1)
    /// The last connection libcurl began to open for the exchange (written by libcurl's callback): what the path of
    /// one still connecting is judged by. [transfer thread]
    nonisolated(unsafe) private let connectAttempt = UnsafeMutablePointer<bahost_curl_connect_attempt>.allocate(
        capacity: 1)

    /// Makes the exchange and starts it on `thread`.
    init(_ request: Request, on thread: TransferThread, bodyEnded: @escaping @Sendable () -> Void) throws(TransferError) {
        guard let easy = thread.easyHandle() else { throw CurlFailure.of(CURLE_OUT_OF_MEMORY) }
        self.easy = easy
        self.thread = thread
        self.bodyEnded = bodyEnded
        minimumRate = request.configuration.minimumRate
        proxy = request.proxy.proxy
        if request.yields { state.withLock { $0.pace.yielding = YieldController() } }
        networkUse = request.networkUse
        progressInterval = request.progressInterval
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
        var list: UnsafeMutablePointer<curl_slist>?
        for line in request.headerLines { list = curl_slist_append(list, line) }
        headerList = list
        errorBuffer.initialize(to: 0)
        connectAttempt.initialize(to: bahost_curl_connect_attempt())
        connectAttempt.pointee.socket = -1
        let configured = configure(request)
        guard configured == CURLE_OK else {
            throw CurlFailure.of(configured, detail: String(cString: curl_easy_strerror(configured)))
        }
        // libcurl holds the exchange (the callbacks' context) from here until `ended`.
        let context = Unmanaged.passRetained(self).toOpaque()
        _ = bahost_curl_set_pointer(easy, CURLOPT_PRIVATE, context)
        _ = bahost_curl_set_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = bahost_curl_set_pointer(easy, CURLOPT_HEADERDATA, context)
        if request.yields {
            // Its own connection, whose socket the controller reads (TCP_INFO).
            _ = bahost_curl_set_long(easy, CURLOPT_FRESH_CONNECT, 1)
            _ = bahost_curl_set_pointer(easy, CURLOPT_SOCKOPTDATA, context)
            _ = bahost_curl_set_sockopt_callback(easy, Self.socketCallback)
        }
        if !thread.post({ [self] in thread.add(self) }) { ended(CurlFailure.of(CURLE_ABORTED_BY_CALLBACK)) }
    }

    deinit {
        thread.recycle(easy)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
        connectAttempt.deallocate()
    }

    private func configure(_ request: Request) -> CURLcode {
        let configuration = request.configuration
        var result = CURLE_OK
        func set(_ code: CURLcode) { if result == CURLE_OK { result = code } }
        set(bahost_curl_set_string(easy, CURLOPT_URL, request.url))
        set(bahost_curl_set_pointer(easy, CURLOPT_HTTPHEADER, headerList))
        set(bahost_curl_set_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer))
        set(bahost_curl_set_callback(easy, CURLOPT_WRITEFUNCTION, Self.writeCallback))
        set(bahost_curl_set_callback(easy, CURLOPT_HEADERFUNCTION, Self.headerCallback))
        // Only the web's schemes, and no redirect followed by libcurl: each hop is vetted (`TransferClient`).
        set(bahost_curl_set_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(bahost_curl_set_long(easy, CURLOPT_FOLLOWLOCATION, 0))
        set(bahost_curl_set_long(easy, CURLOPT_NOSIGNAL, 1))
        set(bahost_curl_set_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout.inNanoseconds / 1_000_000)))
        set(bahost_curl_set_long(easy, CURLOPT_TCP_KEEPALIVE, 1))
        set(bahost_curl_record_connects(easy, connectAttempt))
        // A stream of an HTTP/2 connection being made waits for it rather than opening another. Only https
        // negotiates HTTP/2: a plain-http request waiting so would wait on a server that never answers another.
        if request.url.lowercased().hasPrefix("https:") { set(bahost_curl_set_long(easy, CURLOPT_PIPEWAIT, 1)) }
        if request.largeBody { set(bahost_curl_set_long(easy, CURLOPT_BUFFERSIZE, configuration.receiveBufferSize)) }
        if let ca = configuration.additionalCAFile {
            // The file besides the system's store: libcurl with OpenSSL reads both a file and a folder.
            set(bahost_curl_set_string(easy, CURLOPT_CAINFO, ca))
            set(bahost_curl_set_string(easy, CURLOPT_CAPATH, TransferConfiguration.systemCertificates))
        }
        // The proxy is always said, "" for none: libcurl would otherwise read the environment itself.
        set(bahost_curl_set_string(easy, CURLOPT_PROXY, request.proxy.proxy?.url ?? ""))
        if let noProxy = request.proxy.noProxy { set(bahost_curl_set_string(easy, CURLOPT_NOPROXY, noProxy)) }
        if request.proxy.proxy != nil {
            // Whichever scheme the proxy asks for: Basic, Digest, NTLM, Negotiate.
            set(bahost_curl_set_long(easy, CURLOPT_PROXYAUTH, bahost_curl_auth_any))
            if let ca = configuration.additionalCAFile {
                set(bahost_curl_set_string(easy, CURLOPT_PROXY_CAINFO, ca))
                set(bahost_curl_set_string(easy, CURLOPT_PROXY_CAPATH, TransferConfiguration.systemCertificates))
            }
        }
        return result
    }

    // MARK: The task's side [any thread]

    /// Lends the file to the transfer thread: what arrived meanwhile is written now, the rest as it comes. Returns
    /// why the body was refused, when what had arrived already passed a bound or could not be written.
    func writeBody(into file: PartialFile, bounds: Bounds) -> TransferError? {
        let (refusal, paused, whole) = state.withLock { state -> (TransferError?, Bool, Bool) in
            // The body's pace counts from here: before the head is judged the transfer may wait for the host, and
            // the connection and the server's first answer are the timeouts' business.
            let now = ContinuousClock.now
            var body = Body(file: file, bounds: bounds, lastReport: now, stretchStart: now)
            state.lastHeard = now
            var (paused, whole) = (false, false)
            if case .holding(let held, let wasPaused, let wasWhole) = state.phase {
                (paused, whole) = (wasPaused, wasWhole)
                if !held.isEmpty && state.refusal == nil { state.refusal = held.withUnsafeBytes { body.write($0) } }
            }
            state.phase = .writing(body)
            return (state.refusal, paused, whole)
        }
        if refusal != nil { return refusal }
        if paused { thread.post { [self] in thread.resume(self) } }
        if whole { bodyEnded() }
        return nil
    }

    /// Refuses the body: a short one is read and dropped (its connection serves the next request), a longer one
    /// closes the connection; `.ended` follows.
    func discard() {
        let paused = state.withLock { state in
            defer { state.phase = .discarding(bytes: 0) }
            if case .holding(_, let paused, _) = state.phase { return paused }
            return false
        }
        if paused {
            thread.post { [self] in thread.abort(self, CurlFailure.of(CURLE_ABORTED_BY_CALLBACK)) }
        }
    }

    /// Stops the exchange as cancelled (-999); what arrived stays in the file.
    func cancel() {
        thread.post { [self] in thread.abort(self, CurlFailure.of(CURLE_ABORTED_BY_CALLBACK)) }
    }

    /// The file lent by `writeBody`, once `.ended` was reported or the task was cancelled; nothing is written to it
    /// after.
    func returnFile() -> PartialFile? {
        state.withLock { state in
            guard case .writing(let body) = state.phase else { return nil }
            state.phase = .returned
            return body.file
        }
    }

    // MARK: The transfer thread's side

    /// When the server was last heard from, while the silence is its own; nil while the host holds the response
    /// (a head waiting for its judgment, a part waiting for the pace).
    var silentSince: ContinuousClock.Instant? {
        state.withLock { state in
            if state.pace.until != nil { return nil }
            if case .holding = state.phase { return nil }
            return state.lastHeard
        }
    }

    /// The body's share of the rate ceilings, in bytes a second, 0 for none. [transfer thread]
    var paceRate: Int64 {
        get { state.withLock { $0.pace.rate } }
        set { state.withLock { $0.pace.rate = newValue } }
    }

    /// While a part waits for the pace, when to offer it again. [transfer thread]
    var pacedUntil: ContinuousClock.Instant? { state.withLock { $0.pace.until } }

    /// The pace's wait is over: the part it held may be offered again. [transfer thread]
    func paceElapsed() { state.withLock { $0.pace.until = nil } }

    /// Whether the exchange yields to the machine's other traffic (`YieldController`).
    var yields: Bool { state.withLock { $0.pace.yielding != nil } }

    /// Feeds a yielding exchange's controller the connection's receive RTT, and sets the receive window it decides
    /// (`SO_RCVBUF`: the window the kernel advertises follows the buffer). [transfer thread]
    func controlYield(now: ContinuousClock.Instant) {
        let due = state.withLock { state -> (socket: Int32, checkPeer: Bool)? in
            guard state.pace.yielding != nil, state.pace.socket >= 0,
                now - state.pace.sampledAt >= TransferThread.yieldSampling
            else { return nil }
            state.pace.sampledAt = now
            return (state.pace.socket, !state.pace.peerChecked)
        }
        guard let (socket, checkPeer) = due else { return }
        if checkPeer {
            // A server on this machine shares no link with the user's traffic: nothing to yield to.
            let peer = String(cString: bahost_curl_info_string(easy, CURLINFO_PRIMARY_IP))
            guard !peer.isEmpty else { return }
            let local = peer.hasPrefix("127.") || peer == "::1" || peer.hasPrefix("::ffff:127.")
            state.withLock { state in
                state.pace.peerChecked = true
                if local { state.pace.yielding = nil }
            }
            if local { return }
        }
        var segment: UInt32 = 0
        let microseconds = bahost_tcp_receive_rtt(socket, &segment)
        let window = state.withLock {
            $0.pace.yielding?.sample(rtt: .microseconds(max(0, microseconds)), segment: Int(segment), now: now)
        }
        if let window { bahost_set_receive_buffer(socket, Int32(window)) }
    }

    /// How the download uses the network, for the machine's conditions to judge.
    let networkUse: NetworkUse?

    /// Whether the server (or the proxy) accepted the TCP connection: libcurl names the connection's local end only
    /// then, and its connect time only once TLS is done too.
    var isConnected: Bool { !localAddress.isEmpty || isEstablished }

    /// Whether the connection is made, TLS included: before it, the connect timeout is libcurl's business.
    var isEstablished: Bool { bahost_curl_info_offset(easy, CURLINFO_CONNECT_TIME_T) > 0 }

    /// The connection's two ends, "" before it is made.
    var peerAddress: String { String(cString: bahost_curl_info_string(easy, CURLINFO_PRIMARY_IP)) }
    var localAddress: String { String(cString: bahost_curl_info_string(easy, CURLINFO_LOCAL_IP)) }

    /// How far the connection got, and for one never made, what the routes say of the way to its peer now.
    func connectionProgress(lastReachedFrom: (String) -> String?) -> ConnectionProgress {
        if isEstablished { return .connected }
        if !localAddress.isEmpty { return .handshaking }
        let peer = attemptedPeer
        guard !peer.isEmpty else { return .connecting(.unknown) }
        guard let source = NetworkPath.usableSource(toward: peer) else { return .connecting(.gone) }
        if let last = lastReachedFrom(peer), last != source { return .connecting(.changed) }
        return .connecting(.unchanged)
    }

    /// The numeric address of the peer libcurl last began to connect to, "" before it did.
    private var attemptedPeer: String {
        withUnsafeBytes(of: connectAttempt.pointee.peer) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// How long a connected server may have been silent when the network changes before its connection is taken
    /// for one the change broke.
    static let stalledAtChange = Duration.seconds(2)
    /// How long a connection may have waited for the server's answer when the network changes before it is started
    /// again: longer than a round trip on any network a download goes over.
    static let unansweredConnectAtChange = Duration.seconds(1)

    /// What a change the kernel reported does to the exchange, nil to let it go on. Offline when no usable route
    /// leads to its peer (the server, or the proxy) now. Started again at once on the new path when its connection,
    /// or its connect still unanswered, leaves from an address the kernel would no longer send from (the default
    /// route moved, Wi-Fi to Ethernet, a second link back), when a connect has waited `unansweredConnectAtChange`
    /// (it may have left while its link had no carrier), or when its connected server has been silent for
    /// `stalledAtChange`: a connect or a read begun on the old path is never waited out. [transfer thread]
    func afterChange(now: ContinuousClock.Instant) -> TransferError? {
        let connected = isConnected
        // libcurl names the connection's ends once it is made; before, the recorded connect does.
        let peer = connected ? peerAddress : attemptedPeer
        if !peer.isEmpty {
            guard let source = NetworkPath.usableSource(toward: peer) else {
                return TransferError(
                    .network, code: connected ? CurlFailure.networkConnectionLost : CurlFailure.notConnectedToInternet,
                    domain: TransferError.urlDomain,
                    message: connected
                        ? "the network went away: no route to the server"
                        : "the network went away while connecting: no route to the server",
                    offline: true)
            }
            if connected {
                let local = localAddress
                if !local.isEmpty && local != source {
                    return .restart("the network changed: the server is now reached from another address")
                }
            } else if attemptedLocalAddress != source {
                return .restart("the path to the server changed while connecting: started again on the new path")
            }
        } else if !connected {
            return nil  // still resolving the name: no path taken yet
        }
        let waited = connected ? Self.stalledAtChange : Self.unansweredConnectAtChange
        guard let since = silentSince, now - since >= waited else { return nil }
        return .restart(
            connected
                ? "the network changed while the server was silent for \((now - since).tenths) s: started again"
                : "the network changed while the connection waited \((now - since).tenths) s for an answer: "
                    + "started again")
    }

    /// The local address the recorded connect left from ("" when it cannot be read).
    private var attemptedLocalAddress: String {
        let socket = connectAttempt.pointee.socket
        var local = [CChar](repeating: 0, count: 64)
        guard socket >= 0, bahost_socket_local_address(socket, &local, local.count) == 0 else { return "" }
        return String(nulTerminated: local)
    }

    /// libcurl ended the request with `code`.
    func finished(_ code: CURLcode) {
        var failure: TransferError?
        if code != CURLE_OK {
            let osErrno = Int32(bahost_curl_info_long(easy, CURLINFO_OS_ERRNO))
            let connection = connectionProgress(lastReachedFrom: thread.lastReachedFrom)
            let unresolved = code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY
                || connection == .connecting(.unknown)
            let detail = CurlFailure.printable(errorBuffer)
            let connectStatus = bahost_curl_info_long(easy, CURLINFO_HTTP_CONNECTCODE)
            failure = state.withLock { $0.refusal }
                ?? CurlFailure.of(
                    code, osErrno: osErrno, connection: connection, detail: proxy?.scrubbed(detail) ?? detail,
                    routeOut: !unresolved || NetworkPath.hasRouteOut, proxy: proxy, connectStatus: connectStatus)
        }
        let (lent, headDone) = state.withLock { state -> (Bool, Bool) in
            switch state.phase {
            case .awaitingHead:
                return (false, false)
            case .holding(let held, let paused, _):
                if failure == nil { state.phase = .holding(held: held, paused: paused, whole: true) }
                return (false, true)
            case .writing:
                return (true, true)
            case .discarding, .returned:
                return (false, true)
            }
        }
        if failure == nil && !headDone {
            failure = TransferError(
                .transient, code: CurlFailure.badServerResponse, domain: TransferError.urlDomain,
                message: "the server's response has no head")
        }
        if failure == nil && lent { bodyEnded() }
        ended(failure)
    }

    /// Reports the end, once, and lets libcurl's hold on the exchange go.
    func ended(_ failure: TransferError?) {
        let first = state.withLock { state in
            defer { state.endReported = true }
            return !state.endReported
        }
        guard first else { return }
        continuation.yield(.ended(failure))
        continuation.finish()
        Unmanaged.passUnretained(self).release()
    }

    private static let writeCallback: bahost_curl_data_callback = { bytes, size, count, context in
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(context!).takeUnretainedValue()
        return exchange.received(UnsafeRawBufferPointer(start: bytes, count: size * count))
    }

    private static let socketCallback: bahost_curl_sockopt_callback = { context, socket, _ in
        Unmanaged<HTTPExchange>.fromOpaque(context!).takeUnretainedValue().state.withLock {
            $0.pace.socket = Int32(socket)
        }
        return 0  // CURL_SOCKOPT_OK
    }

    private static let headerCallback: bahost_curl_data_callback = { bytes, size, count, context in
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(context!).takeUnretainedValue()
        return exchange.headerLine(UnsafeRawBufferPointer(start: bytes, count: size * count))
    }

    /// A part of the body. Returns how much of it was taken: all, 0 to stop the transfer (its refusal says why), or
    /// `CURL_WRITEFUNC_PAUSE` to have libcurl keep it until the head is judged.
    private func received(_ bytes: UnsafeRawBufferPointer) -> Int {
        enum Next { case take, pause, paced, refuse, report(Int64) }
        let now = ContinuousClock.now
        let next = state.withLock { state -> Next in
            state.lastHeard = now
            if state.pace.rate > 0, let again = state.pace.pacer.admit(bytes.count, rate: state.pace.rate, now: now) {
                // libcurl keeps the part; the transfer thread offers it again when the pace allows it.
                state.pace.until = again
                return .paced
            }
            switch state.phase {
            case .awaitingHead:
                // libcurl hands the body over after the head's blank line; a part before it waits with the head.
                state.phase = .holding(held: [], paused: false, whole: false)
                fallthrough
            case .holding:
                return state.hold(bytes) ? .take : .pause
            case .discarding(let count):
                state.phase = .discarding(bytes: count + bytes.count)
                return count + bytes.count <= Self.discardedBytesLimit ? .take : .refuse
            case .writing(var body):
                state.phase = .returned  // the file's one owner while it is written
                defer { state.phase = .writing(body) }
                guard state.refusal == nil else { return .refuse }
                if let error = body.keepsUp(bytes.count, now: now, minimumRate) ?? body.write(bytes) {
                    state.refusal = error
                    return .refuse
                }
                guard now - body.lastReport >= progressInterval else { return .take }
                body.lastReport = now
                return .report(body.file.length)
            case .returned:
                // A cancelled task took its file back before the transfer thread has aborted: what arrives after
                // is not written.
                state.refusal = state.refusal ?? CurlFailure.of(CURLE_ABORTED_BY_CALLBACK)
                return .refuse
            }
        }
        switch next {
        case .pause, .paced: break
        default: thread.receivedBytes.add(Int64(bytes.count), ordering: .relaxed)
        }
        switch next {
        case .take: return bytes.count
        case .pause, .paced: return bahost_curl_write_pause
        case .refuse: return 0
        case .report(let length):
            continuation.yield(.progress(length))
            return bytes.count
        }
    }

    /// A line of the head: the status line, a field, or the blank line that ends it (`.head` then, unless the
    /// response is an interim one).
    private func headerLine(_ line: UnsafeRawBufferPointer) -> Int {
        let blank = line.count <= 2 && line.allSatisfy { $0 == 0x0D || $0 == 0x0A }
        let status = blank ? bahost_curl_info_long(easy, CURLINFO_RESPONSE_CODE) : 0
        enum Next { case take, refuse, head(ResponseHeaders) }
        let next = state.withLock { state -> Next in
            state.lastHeard = .now
            state.headBytes += line.count
            guard state.headBytes <= Self.maximumHeadBytes else {
                state.refusal = TransferError(
                    .transient, code: CurlFailure.badServerResponse, domain: TransferError.urlDomain,
                    message: "the response's header passed the limit of \(Self.maximumHeadBytes) bytes")
                return .refuse
            }
            // After the head, a line is a trailer's: counted, not kept.
            guard case .awaitingHead(var headers) = state.phase else { return .take }
            if blank {
                // An interim response (100, 103) is followed by the real one.
                guard status >= 200 else {
                    state.phase = .awaitingHead(ResponseHeaders())
                    return .take
                }
                // The body's first parts are held in one allocation when the head says its length (a small
                // file's arrives in one go).
                var held: [UInt8] = []
                let announced = ResponseVerdict.announcedSize(headers: headers, start: 0) ?? 0
                held.reserveCapacity(Int(clamping: min(announced, Int64(Self.heldBytesLimit))))
                state.phase = .holding(held: held, paused: false, whole: false)
                return .head(headers)
            }
            if line.starts(with: "HTTP/".utf8) {
                headers = ResponseHeaders()
            } else if let (name, value) = ResponseHeaders.field(line) {
                headers.add(name: name, value: value)
            }
            state.phase = .awaitingHead(headers)
            return .take
        }
        switch next {
        case .take: break
        case .refuse: return 0
        case .head(let headers): continuation.yield(.head(status: status, headers: headers))
        }
        return line.count
    }
}
