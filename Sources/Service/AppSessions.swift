import CBAExtension
import Engine
import Foundation
import ServiceWire
import Synchronization
import Vocabulary

/// The connected clients: which apps run with a delegate (they get their completions and challenges first), the
/// events their delegates hear (begin, pause, throttled progress), and the command lines following an app's
/// progress.
final class AppSessions: AppDelegateRouter {
    private let state = Mutex(State())
    /// How long the service waits for an app's delegate to answer. A completion whose callback takes longer stays
    /// with the app until its method returns or its process ends (`DeliveryClaim`); a challenge not answered in
    /// time goes to the extension.
    let callbackTimeout: Duration
    /// The least time between two progress callbacks for one download.
    let progressInterval: Duration

    private struct State {
        var sessions: [ObjectIdentifier: ClientSession] = [:]
        /// Command lines following apps: (session, request id, app).
        var followers: [(session: ClientSession, id: UInt64, app: String)] = []
        /// Per download: the bytes last reported to the delegate, and when.
        var progress: [String: (total: Int64, at: ContinuousClock.Instant)] = [:]
    }

    init(callbackTimeout: Duration = .seconds(30), progressInterval: Duration = .milliseconds(100)) {
        self.callbackTimeout = callbackTimeout
        self.progressInterval = progressInterval
    }

    func add(_ session: ClientSession) {
        state.withLock { $0.sessions[ObjectIdentifier(session)] = session }
    }

    /// Forgets a session; returns whether it was the app's last one.
    func remove(_ session: ClientSession) -> Bool {
        state.withLock { state in
            state.sessions.removeValue(forKey: ObjectIdentifier(session))
            state.followers.removeAll { $0.session === session }
            guard let app = session.appIdentifier else { return false }
            return !state.sessions.values.contains { $0.appIdentifier == app }
        }
    }

    func closeAll() {
        state.withLock { $0.sessions.values }.forEach { $0.socket.close() }
    }

    private func delegateSession(_ appIdentifier: String) -> ClientSession? {
        state.withLock { state in
            state.sessions.values.first { $0.appIdentifier == appIdentifier && $0.hasDelegate }
        }
    }

    // MARK: AppDelegateRouter

    func delegateProcess(_ appIdentifier: String) -> Int32? { delegateSession(appIdentifier)?.peerPID }

    func offer(_ completion: Completion, of appIdentifier: String, to pid: Int32) async -> OfferResult {
        let session = state.withLock { state in
            state.sessions.values.first { $0.appIdentifier == appIdentifier && $0.hasDelegate && $0.peerPID == pid }
        }
        guard let session else { return .notSent }
        let callback: AppCallback
        switch completion.result {
        case .finished(let filePath): callback = .finished(completion.download, filePath: filePath)
        case .failed(let error, let ticket): callback = .failed(completion.download, error, ticket: ticket)
        }
        switch await session.call(callback, timeout: callbackTimeout) {
        case .replied(let reply): return reply.handled ? .handled : .declined
        case .noAnswer: return .noAnswer
        case .notSent: return .notSent
        }
    }

    func challenge(_ download: Download, of appIdentifier: String, _ challenge: AuthenticationChallenge) async
        -> ChallengeAnswer?
    {
        guard let session = delegateSession(appIdentifier) else { return nil }
        guard let reply = await session.call(.challenge(download, challenge), timeout: callbackTimeout).reply,
            reply.handled
        else { return nil }
        return ChallengeAnswer(disposition: reply.disposition ?? 1, user: reply.user, password: reply.password)
            ?? .performDefaultHandling
    }

    // MARK: Events

    /// Command lines that wait on an app (install, launch) see its events as progress lines.
    func follow(_ appIdentifier: String, from session: ClientSession, request id: UInt64) {
        state.withLock { $0.followers.append((session, id, appIdentifier)) }
    }

    func unfollow(_ session: ClientSession, request id: UInt64) {
        state.withLock { $0.followers.removeAll { $0.session === session && $0.id == id } }
    }

    func forward(_ event: LifecycleEvent) {
        guard let app = event.appIdentifier else { return }
        let followers = state.withLock { $0.followers.filter { $0.app == app } }
        if !followers.isEmpty {
            let line = event.line
            let progress = ProgressLine(text: line.text, json: line.jsonText)
            for follower in followers { follower.session.send(.progress(id: follower.id, progress)) }
        }
        if let (pack, update) = assetPackEvent(event) {
            // `AssetPackManager`'s status updates: every connection of the app hears them, delegate or not.
            let sessions = state.withLock { $0.sessions.values.filter { $0.appIdentifier == app } }
            for session in sessions { session.send(.event(.assetPack(pack, update))) }
            return
        }
        guard let message = delegateEvent(event), let session = delegateSession(app) else { return }
        session.send(.event(message))
    }

    /// A managed pack's progress, installation or failure; nil for anything else (a pack's download never reaches
    /// the app's `BADownloadManager` delegate).
    private func assetPackEvent(_ event: LifecycleEvent) -> (AssetPackInfo, WirePackUpdate)? {
        func pack(_ row: DownloadStatus) -> AssetPackInfo? {
            guard row.download.kind == .assetPack else { return nil }
            // The unique identifier ends with the version it was queued for: "….vN".
            let version = row.assetPackVersion
            return AssetPackInfo(id: row.identifier, version: version, downloadSize: row.download.fileSize, userInfo: nil)
        }
        switch event {
        case .began(let row, _):
            return pack(row).map { ($0, .began) }
        case .paused(let row, _, _, _):
            return pack(row).map { ($0, .paused) }
        case .progress(let row, let received, let expected):
            guard let pack = pack(row), throttled(row.uniqueIdentifier, received: received) != nil else { return nil }
            return (pack, .downloading(completed: received, total: expected))
        case .finished(let row), .failed(let row, _):
            // A pack counts as finished once installed, and failed as `packFailed` says.
            guard row.download.kind == .assetPack else { return nil }
            state.withLock { _ = $0.progress.removeValue(forKey: row.uniqueIdentifier) }
            return nil
        case .packInstalled(_, let id, let version):
            return (AssetPackInfo(id: id, version: version, downloadSize: 0, userInfo: nil), .finished)
        case .packFailed(_, let id, let error):
            return (AssetPackInfo(id: id, version: 0, downloadSize: 0, userInfo: nil), .failed(error))
        default:
            return nil
        }
    }

    private func delegateEvent(_ event: LifecycleEvent) -> AppEvent? {
        switch event {
        case .began(let download, let offset):
            state.withLock { $0.progress[download.uniqueIdentifier] = (offset, .now) }
            var wire = download.download
            wire.state = BA_DOWNLOAD_STATE_DOWNLOADING.rawValue
            return .began(wire)
        case .paused(let download, _, _, _):
            return .paused(download.download)
        case .progress(let download, let received, let expected):
            guard let written = throttled(download.uniqueIdentifier, received: received) else { return nil }
            var wire = download.download
            wire.state = BA_DOWNLOAD_STATE_DOWNLOADING.rawValue
            return .progress(wire, bytesWritten: written, totalBytesWritten: received, totalBytesExpected: expected)
        case .finished(let download), .failed(let download, _):
            state.withLock { _ = $0.progress.removeValue(forKey: download.uniqueIdentifier) }
            return nil
        default:
            return nil
        }
    }

    /// The bytes written since the download's last progress callback, when one is due (at most one each
    /// `progressInterval`); nil when not.
    private func throttled(_ download: String, received: Int64) -> Int64? {
        state.withLock { state in
            let last = state.progress[download] ?? (0, .now - progressInterval)
            guard ContinuousClock.now - last.at >= progressInterval else { return nil }
            state.progress[download] = (received, .now)
            return received - last.total
        }
    }
}
