import Foundation
import HostVocabulary
import Packs
import Peers
import Queue
import Synchronization
import Transfer

/// Sharing managed packs' archives with the other machines on the network (docs/PEERS.md): which archives are
/// shared, the swarm that fetches one, and the archives this machine serves. The rules: an archive is shared only
/// when its app allows it (`BAHostSharesWithPeers`), the person's `peers.share` names someone, the download manifest
/// gave its BitTorrent hashes (its identity: never a peer's word), and its URL is plain enough to be a web seed
/// (no query, no proxy). Everything else is fetched as before, over HTTP alone.
///
/// The swarm's file is the archive in `peers/PIECES-ROOT/`: a fetch fills it there (from peers and from the CDN as
/// a web seed, each 16 KiB block checked against the manifest's root) and hard-links it to the download's partial
/// file, and the transfer job delivers it as any other; an archive fetched over HTTP is linked there when it
/// finishes. So the archive a machine serves costs no space until the pack's install removes the delivered copy.
/// [any thread]
final class PeerSharing: Sendable {
    private let peersPath: String
    /// Where the session listens; nil: this engine never shares (`bahost run`, tests).
    private let listen: String?
    private let observe: LifecycleObserver
    /// How long a swarm may go without a new piece before the download falls back to HTTP.
    let stallAfter: Duration
    /// How long peers may deliver nothing before the web seed serves a fetch again.
    static let webSeedReturns = Duration.seconds(3)
    /// The downloads whose figures are kept.
    static let figuresKept = 4096

    private struct State {
        var rules = PeerRules.off
        var metered = false
        var swarm: Swarm?
        /// Each shared archive's swarm, by its folder.
        var members: [String: Int64] = [:]
        /// The folders a fetch is filling: never served or removed by `serveOnly` meanwhile.
        var fetching: Set<String> = []
        /// What each download took from peers and from the CDN, by unique identifier (since the engine started).
        var figures: [String: PeerFigures] = [:]
    }
    private let state = Mutex(State())

    init(peersPath: String, listen: String?, stallAfter: Duration, observe: @escaping LifecycleObserver) {
        self.peersPath = peersPath
        self.listen = listen
        self.stallAfter = stallAfter
        self.observe = observe
    }

    /// Takes the person's rules (and whether the network is metered: nothing is served over one): starts the
    /// session when they name someone, stops it when they name nobody, and sets what it sends. Returns whether a
    /// session was started, so that the caller joins the archives to serve.
    @discardableResult
    func apply(_ rules: PeerRules? = nil, metered: Bool? = nil) -> Bool {
        // The session a change ends stops outside the lock (its thread is joined), before a new one takes the port.
        let ended = state.withLock { state -> Swarm? in
            let before = state.rules
            if let rules { state.rules = rules }
            if let metered { state.metered = metered }
            let shares = listen != nil && state.rules.sharesWithAnyone
            // Another identity (any bahost, or a household's) is another swarm for every file: start anew.
            let identityChanged = before.mode != state.rules.mode || before.pairing != state.rules.pairing
            guard !shares || identityChanged else { return nil }
            defer { state.swarm = nil; state.members = [:] }
            return state.swarm
        }
        ended?.stop()
        return state.withLock { state -> Bool in
            var started = false
            if state.swarm == nil, let listen, state.rules.sharesWithAnyone {
                do {
                    state.swarm = try Swarm(listen: listen, uploadRate: state.rules.uploadRate)
                    started = true
                } catch {
                    observe(.queueFailed("peers: \(error)"))
                }
            }
            state.swarm?.setServing(
                uploadRate: state.rules.uploadRate, serving: state.rules.notServing == nil && !state.metered)
            return started
        }
    }

    /// Ends the session (the engine's shutdown).
    func stop() {
        state.withLock { state -> Swarm? in
            defer { state.swarm = nil; state.members = [:] }
            return state.swarm
        }?.stop()
    }

    /// Whether a session runs: someone to share with.
    var isActive: Bool { state.withLock { $0.swarm != nil } }

    /// Where sharing stands, for `bahost debug status`.
    func summary() -> PeerSummary {
        let (rules, metered, swarm, members, figures) = state.withLock {
            ($0.rules, $0.metered, $0.swarm, $0.members, $0.figures)
        }
        let statuses = swarm.map { swarm in members.values.compactMap { swarm.status($0) } } ?? []
        var notServing = rules.notServing
        if notServing == nil && metered { notServing = "a metered network" }
        return PeerSummary(
            mode: rules.mode, paired: rules.pairing != nil, running: swarm != nil, notServing: notServing,
            uploadRate: rules.uploadRate,
            ports: swarm?.ports ?? (0, 0), swarms: members.count,
            wholeSwarms: statuses.filter { $0.state == .whole }.count,
            sentToPeers: statuses.reduce(0) { $0 + $1.sentToPeers },
            fromPeers: figures.values.reduce(0) { $0 + $1.fromPeers },
            fromWebSeed: figures.values.reduce(0) { $0 + $1.fromWebSeed })
    }

    /// What a download took from peers and from the CDN through the swarm, since the engine started.
    func figures(_ uniqueIdentifier: String) -> PeerFigures? { state.withLock { $0.figures[uniqueIdentifier] } }

    /// The swarm file of `entry`'s archive at `url`, when it is shared (nil: fetch it over HTTP alone).
    func sharedFile(_ entry: DownloadManifest.Entry, url: String, app: AppRecord, have: Bool) -> SwarmFile? {
        let (running, rules) = state.withLock { ($0.swarm != nil, $0.rules) }
        guard app.sharesWithPeers, let hashes = entry.bittorrent, running,
            let (folderURL, name) = Self.webSeed(url), let root = Self.bytes(hex: hashes.piecesRoot)
        else { return nil }
        // "My own machines": an SSL swarm of the household's authority.
        let household = rules.mode == .own ? rules.pairing : nil
        let layer = hashes.pieceLayer.flatMap { Data(base64Encoded: $0) }.map { Array($0) } ?? []
        return SwarmFile(
            name: name, size: entry.downloadSize, pieceLength: hashes.pieceLength, piecesRoot: root,
            pieceLayer: layer, folder: "\(peersPath)/\(hashes.piecesRoot)", webSeed: folderURL, haveFile: have,
            household: household)
    }

    /// A URL's folder (ending in "/") and last component, when libtorrent can use it as a web seed: http(s), no
    /// query, fragment or credentials, a last component of plain characters (libtorrent appends the file's name to
    /// the folder's URL, escaping it its own way).
    static func webSeed(_ url: String) -> (folder: String, name: String)? {
        guard let parsed = URLComponents(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""),
            parsed.query == nil, parsed.fragment == nil, parsed.user == nil, parsed.password == nil,
            let slash = url.lastIndex(of: "/")
        else { return nil }
        let name = String(url[url.index(after: slash)...])
        let plain = name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x2D || byte == 0x2E || byte == 0x5F
        }
        guard plain, !name.isEmpty, name != ".", name != ".." else { return nil }
        return (String(url[...slash]), name)
    }

    private static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return bytes
    }

    /// How a fetch through the swarm ended.
    enum Fetched: Sendable {
        /// The archive is whole (every piece checked) and linked at the partial path.
        case whole(Int64)
        /// The host stopped it (a cancel, or the machine's conditions): the download waits as for HTTP.
        case stopped(TransferError)
        /// The swarm could not finish it: fetch it over HTTP, for this reason.
        case fellBack(String)
    }

    /// Fetches `file` through the swarm and links it at `partialPath`, reporting each step of checked bytes to
    /// `progress`. It stops when the task is cancelled or `hold` names a reason to wait, and falls back when the
    /// swarm fails or finds no new piece for `stallAfter`; it receives at most `ceiling` (looked at again at each
    /// step: the person's ceilings change live). [the transfer's task]
    func fetch(
        _ file: SwarmFile, uniqueIdentifier: String, partialPath: String,
        hold: @Sendable () -> NetworkConditions.Hold?, ceiling: @Sendable () -> Int64?,
        progress: @Sendable (Int64) async -> Void
    ) async -> Fetched {
        let path = "\(file.folder)/\(file.name)"
        state.withLock { _ = $0.fetching.insert(file.folder) }
        defer { state.withLock { _ = $0.fetching.remove(file.folder) } }
        guard let (swarm, number) = join(file) else { return .fellBack("the swarm could not be joined") }
        var have: Int64 = -1
        var lastPiece = ContinuousClock.now
        var limit: Int64?? = .none
        // Peers first: the web seed (the CDN, behind the household's line) fills in from the start, and steps aside
        // while peers deliver; it comes back when nothing came for `webSeedReturns`.
        var fromPeers: Int64 = 0
        var webSeed = true
        while true {
            let now = ceiling()
            if limit != .some(now) {
                swarm.limitDownload(number, to: now)
                limit = .some(now)
            }
            if Task.isCancelled {
                leave(file, number: number)
                return .stopped(.cancelled)
            }
            if let held = hold() {
                leave(file, number: number)
                return .stopped(.held(held))
            }
            guard let status = await swarm.next(number, after: have, within: .seconds(2)) else {
                return .fellBack("sharing with peers stopped")
            }
            record(status, for: uniqueIdentifier)
            switch status.state {
            case .whole:
                markWhole(file)
                unlink(partialPath)
                guard link(path, partialPath) == 0 else {
                    return .fellBack("cannot link the swarm's file: \(String(cString: strerror(errno)))")
                }
                return .whole(file.size)
            case .failed(let why):
                leave(file, number: number)
                return .fellBack("the swarm failed: \(why)")
            case .checking, .downloading:
                break
            }
            if status.fromPeers > fromPeers, webSeed, file.webSeed != nil {
                swarm.useWebSeed(number, false)
                webSeed = false
            }
            fromPeers = status.fromPeers
            if !webSeed, ContinuousClock.now - lastPiece > Self.webSeedReturns {
                swarm.useWebSeed(number, true)
                webSeed = true
            }
            if status.have != have {
                if have >= 0 { lastPiece = .now }
                have = status.have
                await progress(have)
            } else if ContinuousClock.now - lastPiece > stallAfter {
                leave(file, number: number)
                return .fellBack("no piece came from peers or the web seed for \(stallAfter)")
            }
        }
    }

    /// Serves the archive just delivered at `finishedPath` (fetched over HTTP, or already the swarm's): links it
    /// into the peers' folder when the swarm's own copy is not there, and joins its swarm. [blocking pool]
    func serve(_ file: SwarmFile, finishedPath: String) {
        let path = "\(file.folder)/\(file.name)"
        let joined = state.withLock { $0.members[file.folder] }
        if let joined, let swarm = state.withLock({ $0.swarm }), swarm.status(joined)?.state == .whole { return }
        if let joined { leave(file, number: joined) }
        var info = stat()
        var finished = stat()
        let same = stat(path, &info) == 0 && stat(finishedPath, &finished) == 0 && info.st_ino == finished.st_ino
        if !same {
            try? FileManager.default.createDirectory(atPath: file.folder, withIntermediateDirectories: true)
            unlink(path)
            guard link(finishedPath, path) == 0 else { return }
        }
        markWhole(file)
        var serving = file
        serving.haveFile = true
        _ = join(serving)
    }

    /// The marker beside an archive that is whole: only such an archive is served after a restart (a swarm's file
    /// cut short stays sparse, and seeding it would only fail).
    private func markWhole(_ file: SwarmFile) {
        FileManager.default.createFile(atPath: "\(file.folder)/.whole", contents: nil)
    }

    /// Serves the archives of `files` that are whole in their folders, and forgets every other archive in the
    /// peers' folder (a pack whose app no longer shares, or whose version moved on) but those a fetch is filling.
    /// [blocking pool]
    func serveOnly(_ files: [SwarmFile]) {
        let wanted = Dictionary(files.map { ($0.folder, $0) }) { first, _ in first }
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: peersPath)) ?? []
        for folder in folders.map({ "\(peersPath)/\($0)" }) {
            let (member, fetching) = state.withLock { ($0.members[folder], $0.fetching.contains(folder)) }
            if fetching { continue }
            if var file = wanted[folder], FileManager.default.fileExists(atPath: "\(folder)/.whole") {
                file.haveFile = true
                if member == nil { _ = join(file) }
            } else {
                if let member {
                    state.withLock { $0.members.removeValue(forKey: folder) }
                    state.withLock { $0.swarm }?.leave(member)
                }
                try? FileManager.default.removeItem(atPath: folder)
            }
        }
    }

    private func join(_ file: SwarmFile) -> (Swarm, Int64)? {
        guard let swarm = state.withLock({ $0.swarm }) else { return nil }
        if let number = state.withLock({ $0.members[file.folder] }) { return (swarm, number) }
        do {
            try FileManager.default.createDirectory(atPath: file.folder, withIntermediateDirectories: true)
            let number = try swarm.join(file)
            state.withLock { $0.members[file.folder] = number }
            return (swarm, number)
        } catch {
            observe(.queueFailed("peers: \(file.name): \(error)"))
            return nil
        }
    }

    private func leave(_ file: SwarmFile, number: Int64) {
        let swarm = state.withLock { state -> Swarm? in
            state.members.removeValue(forKey: file.folder)
            return state.swarm
        }
        swarm?.leave(number)
    }

    private func record(_ status: SwarmStatus, for uniqueIdentifier: String) {
        state.withLock {
            // Bounded: the figures are for `debug downloads` and `status`, of the downloads of a while.
            if $0.figures[uniqueIdentifier] == nil, $0.figures.count >= Self.figuresKept {
                $0.figures.remove(at: $0.figures.startIndex)
            }
            $0.figures[uniqueIdentifier] = PeerFigures(
                fromPeers: status.fromPeers, fromWebSeed: status.fromWebSeed, peers: status.peers,
                banned: status.banned, failedPieces: status.failedPieces)
        }
    }
}

/// Where sharing with peers stands (`bahost debug status`).
public struct PeerSummary: Sendable {
    public var mode: PeerRules.Mode
    public var paired: Bool
    /// A session runs: someone to share with.
    public var running: Bool
    /// Why nothing is sent to peers now; nil when this machine serves.
    public var notServing: String?
    /// The most sent to peers together, bytes a second; nil for no limit.
    public var uploadRate: Int64?
    public var ports: (plain: Int, ssl: Int)
    /// The archives in the session (served, or being fetched), and those of them whole.
    public var swarms: Int
    public var wholeSwarms: Int
    /// Sent to peers by the swarms in the session, since each joined it.
    public var sentToPeers: Int64
    /// Taken by this engine's downloads from peers and from the CDN (the web seed) since it started.
    public var fromPeers: Int64
    public var fromWebSeed: Int64
}

/// What one download took through the swarm: bytes from peers and from the CDN (the web seed), the peers it was
/// connected to, and those banned for pieces that failed their hash.
public struct PeerFigures: Sendable, Hashable {
    public var fromPeers: Int64
    public var fromWebSeed: Int64
    public var peers: Int
    public var banned: Int
    public var failedPieces: Int
}
