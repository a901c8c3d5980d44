import CTorrent
import Foundation
import HostVocabulary
import Synchronization

/// One file as a swarm knows it: its identity from a trusted manifest (BEP 52's info dictionary is built from these
/// values alone, so no peer's word names it), where it is written, and where the rest may be had over HTTP.
public struct SwarmFile: Sendable, Hashable {
    /// The file's name in `folder`; a web seed's URL is the folder's, which libtorrent follows with this name.
    public var name: String
    public var size: Int64
    public var pieceLength: Int64
    /// 32 bytes.
    public var piecesRoot: [UInt8]
    /// 32 bytes a piece; empty for a file of one piece.
    public var pieceLayer: [UInt8]
    public var folder: String
    /// The URL of the folder the file is served from, ending in "/"; nil: peers alone.
    public var webSeed: String?
    /// The file is whole in `folder`, checked: serve it (libtorrent checks each piece again when first asked).
    public var haveFile: Bool
    /// Only machines certified by this household's authority are peers (an SSL torrent), this one holding its
    /// certificate; nil: any bahost on the network.
    public var household: PeerPairing?

    public init(
        name: String, size: Int64, pieceLength: Int64, piecesRoot: [UInt8], pieceLayer: [UInt8], folder: String,
        webSeed: String?, haveFile: Bool, household: PeerPairing?
    ) {
        self.name = name
        self.size = size
        self.pieceLength = pieceLength
        self.piecesRoot = piecesRoot
        self.pieceLayer = pieceLayer
        self.folder = folder
        self.webSeed = webSeed
        self.haveFile = haveFile
        self.household = household
    }
}

/// Where one file's swarm stands.
public struct SwarmStatus: Sendable, Hashable {
    public enum State: Sendable, Hashable {
        /// libtorrent is reading what the file already holds.
        case checking
        case downloading
        /// Every piece is in and checked.
        case whole
        case failed(String)
    }

    public var state: State
    /// Bytes whose pieces were checked.
    public var have: Int64
    public var fromWebSeed: Int64
    public var fromPeers: Int64
    public var sentToPeers: Int64
    /// Peers connected, the web seed not counted.
    public var peers: Int
    /// Peers banned for pieces that failed their hash.
    public var banned: Int
    public var failedPieces: Int
}

/// Why a swarm could not be started or joined.
public struct SwarmError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// A libtorrent session, through `bahost_torrent.h`: the swarms of the files this machine shares with the others on
/// its network. One thread, the session's owner, takes libtorrent's alerts and wakes whoever waits on a swarm
/// (`next`); every other method may be called from any thread.
public final class Swarm: Sendable {
    private final class Session: @unchecked Sendable {
        // libtorrent's session is safe to call from any thread; the shim guards its own state.
        let pointer: OpaquePointer
        init(_ pointer: OpaquePointer) { self.pointer = pointer }
    }
    private let session: Session
    private let running = Atomic<Bool>(true)
    private let owner = Mutex<OwnedThread?>(nil)
    private struct Waiter {
        var number: Int64
        var have: Int64
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<SwarmStatus?, Never>
    }
    private let waiters = Mutex<[UInt64: Waiter]>([:])
    private let nextWaiter = Atomic<UInt64>(0)

    /// Starts a session listening on `listen` (libtorrent's `listen_interfaces`), sending peers at most
    /// `uploadRate` bytes a second together (nil: no limit).
    public init(listen: String, uploadRate: Int64?) throws(SwarmError) {
        var error = [CChar](repeating: 0, count: 256)
        guard let pointer = bahost_swarm_start(listen, uploadRate ?? 0, &error, error.count) else {
            throw SwarmError("libtorrent could not start: \(text(error))")
        }
        session = Session(pointer)
        let thread = OwnedThread(name: "bahost-swarm") { [self] in run() }
        guard let thread else {
            bahost_swarm_stop(pointer)
            throw SwarmError("the system refused the swarm's thread")
        }
        owner.withLock { $0 = thread }
    }

    /// Ends the session, once: waiters get nil, connections close, files stay. [any thread but the owner's]
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        owner.withLock { $0 }?.join()
        for waiter in waiters.withLock({ waiting in defer { waiting = [:] }; return Array(waiting.values) }) {
            waiter.continuation.resume(returning: nil)
        }
        bahost_swarm_stop(session.pointer)
    }

    deinit { stop() }

    /// The plain and the SSL port the session listens on (0: none).
    public var ports: (plain: Int, ssl: Int) {
        var plain: Int32 = 0
        var ssl: Int32 = 0
        bahost_swarm_ports(session.pointer, &plain, &ssl)
        return (Int(plain), Int(ssl))
    }

    /// The most the session sends peers (nil: no limit), and whether it sends them anything (downloading goes on).
    public func setServing(uploadRate: Int64?, serving: Bool) {
        bahost_swarm_set_serving(session.pointer, uploadRate ?? 0, serving ? 1 : 0)
    }

    /// Joins `file`'s swarm; returns its number in the session.
    public func join(_ file: SwarmFile) throws(SwarmError) -> Int64 {
        guard file.piecesRoot.count == 32 else { throw SwarmError("a pieces root is 32 bytes") }
        var error = [CChar](repeating: 0, count: 256)
        let dh = Self.diffieHellman
        let number = file.piecesRoot.withUnsafeBufferPointer { root in
            file.pieceLayer.withUnsafeBufferPointer { layer in
                withOptionalCString(file.webSeed) { webSeed in
                    withOptionalCString(file.household?.authority) { ca in
                        withOptionalCString(file.household?.certificate) { cert in
                            withOptionalCString(file.household?.key) { key in
                                file.name.withCString { name in
                                    file.folder.withCString { folder in
                                        dh.withCString { dh in
                                            var described = bahost_swarm_file(
                                                name: name, size: file.size, piece_length: file.pieceLength,
                                                pieces_root: root.baseAddress, piece_layer: layer.baseAddress,
                                                piece_layer_size: layer.count, save_path: folder, web_seed: webSeed,
                                                have_file: file.haveFile ? 1 : 0, ssl_ca_pem: ca, ssl_cert_pem: cert,
                                                ssl_key_pem: key, ssl_dh_pem: dh)
                                            return bahost_swarm_add(session.pointer, &described, &error, error.count)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        guard number > 0 else { throw SwarmError(text(error)) }
        return number
    }

    /// RFC 7919's ffdhe2048 group, for the TLS of SSL torrents: without parameters, each one's listener reports an
    /// error and admits nobody (docs/performance/DECISIONS.md #59).
    static let diffieHellman = """
        -----BEGIN DH PARAMETERS-----
        MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz
        +8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a
        87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7
        YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi
        7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD
        ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==
        -----END DH PARAMETERS-----

        """

    /// Whether a swarm asks its web seed for pieces (the CDN): off, peers alone serve it.
    public func useWebSeed(_ number: Int64, _ on: Bool) {
        bahost_swarm_use_web_seed(session.pointer, number, on ? 1 : 0)
    }

    /// The most a swarm receives, from peers and web seeds together; nil: no limit.
    public func limitDownload(_ number: Int64, to bytesPerSecond: Int64?) {
        bahost_swarm_set_download_limit(session.pointer, number, bytesPerSecond ?? 0)
    }

    /// Leaves a swarm; its file stays.
    public func leave(_ number: Int64) { bahost_swarm_remove(session.pointer, number) }

    /// Connects a swarm to a peer at a known address (Local Service Discovery does not reach loopback).
    public func connect(_ number: Int64, address: String, port: Int) {
        _ = bahost_swarm_connect(session.pointer, number, address, Int32(port))
    }

    /// The swarm's state now; nil for a number not in the session.
    public func status(_ number: Int64) -> SwarmStatus? {
        var raw = bahost_swarm_status()
        guard bahost_swarm_status_of(session.pointer, number, &raw) == 0 else { return nil }
        let state: SwarmStatus.State =
            switch raw.state {
            case Int32(BAHOST_SWARM_CHECKING): .checking
            case Int32(BAHOST_SWARM_WHOLE): .whole
            case Int32(BAHOST_SWARM_FAILED):
                .failed(withUnsafeBytes(of: raw.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) })
            default: .downloading
            }
        return SwarmStatus(
            state: state, have: raw.have, fromWebSeed: raw.from_web_seed, fromPeers: raw.from_peers,
            sentToPeers: raw.sent_to_peers, peers: Int(raw.peers), banned: Int(raw.banned),
            failedPieces: Int(raw.failed_pieces))
    }

    /// Waits until the swarm has other than `have` bytes checked, is whole or failed, or `within` passes; returns
    /// its status then (nil: it left the session, or the session stopped). A cancelled task gets the status at
    /// once.
    public func next(_ number: Int64, after have: Int64, within: Duration) async -> SwarmStatus? {
        let key = nextWaiter.wrappingAdd(1, ordering: .relaxed).oldValue
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let deadline = ContinuousClock.now + within
                guard running.load(ordering: .acquiring), !Task.isCancelled else {
                    continuation.resume(returning: status(number))
                    return
                }
                waiters.withLock {
                    $0[key] = Waiter(number: number, have: have, deadline: deadline, continuation: continuation)
                }
            }
        } onCancel: {
            if let waiter = waiters.withLock({ $0.removeValue(forKey: key) }) {
                waiter.continuation.resume(returning: status(number))
            }
        }
    }

    /// [the owner's thread] Takes the alerts, then wakes each waiter whose swarm moved, ended, or waited long enough.
    private func run() {
        while running.load(ordering: .acquiring) {
            bahost_swarm_pump(session.pointer, 250)
            let now = ContinuousClock.now
            let numbers = Set(waiters.withLock { $0.values.map(\.number) })
            var statuses: [Int64: SwarmStatus?] = [:]
            for number in numbers { statuses.updateValue(status(number), forKey: number) }
            let woken = waiters.withLock { waiting -> [(Waiter, SwarmStatus?)] in
                var woken: [(Waiter, SwarmStatus?)] = []
                // A waiter that came after the statuses were read waits for the next look.
                for (key, waiter) in waiting where statuses.keys.contains(waiter.number) {
                    let status = statuses[waiter.number] ?? nil
                    let moved = status.map { $0.have != waiter.have || $0.state == .whole || $0.isFailed } ?? true
                    if moved || now >= waiter.deadline {
                        waiting.removeValue(forKey: key)
                        woken.append((waiter, status))
                    }
                }
                return woken
            }
            for (waiter, status) in woken { waiter.continuation.resume(returning: status) }
        }
    }
}

extension SwarmStatus {
    public var isFailed: Bool {
        if case .failed = state { true } else { false }
    }
}

/// A C buffer's text up to its first NUL.
private func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

private func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
