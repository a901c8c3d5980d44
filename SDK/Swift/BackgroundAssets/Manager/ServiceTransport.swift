import AppClient
import ServiceWire
import Synchronization
import Vocabulary

/// An app's side of `BADownloadManager` and `AssetPackManager`: the protocol's client (`AppClient`, shared with the C
/// library) with Apple's types on it. Errors become `NSError`s in Apple's domains; the delegate's methods run through
/// `DelegateCalls`, one at a time and in order, and a completion is answered once its method returned.
///
/// The app's identity is `$BAHOST_APP_IDENTIFIER` (set by `bahost launch APP -- COMMAND`), else inside a Flatpak its
/// application ID, else its bundle identifier (`AppClient` says the rest: when it connects, reconnects, and what the
/// service accepts).
final class ServiceTransport: HostTransport, Sendable {
    var isExtension: Bool { false }
    let client: AppClient
    /// Delegate methods run here, one at a time and in order, off the thread that reads the socket.
    private let delegateCalls = DelegateCalls()

    init(
        socketPath: String = ServiceProtocol.appSocketPath,
        appIdentifier: String? = ServiceProtocol.defaultAppIdentifier
            ?? Bundle.main.bundleIdentifier,
        assetPackEvents: (@Sendable (AssetPackInfo, WirePackUpdate) -> Void)? = nil
    ) {
        client = AppClient(socketPath: socketPath, appIdentifier: appIdentifier)
        let delegateCalls = self.delegateCalls
        let client = self.client
        client.setHandlers(AppClient.Handlers(
            event: { event in
                if case .assetPack(let pack, let update) = event {
                    assetPackEvents?(pack, update)
                } else {
                    delegateCalls.post { await Self.deliver(event, unless: client) }
                }
            },
            callback: { callback, id in
                let run = { @Sendable in await Self.deliver(callback, id, on: client) }
                if case .challenge = callback { delegateCalls.postBeside(run) } else { delegateCalls.post(run) }
            }))
    }

    /// Runs `body`, its `HostError` thrown as Apple's `NSError`.
    private static func bridged<T>(_ body: () throws(HostError) -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw NSError(wire: error)
        }
    }

    /// Any request; a failure reply is thrown as the service's error.
    func request(_ request: ServiceRequest) throws -> ServiceReply { try Self.bridged { () throws(HostError) in try client.request(request) } }

    /// Opens the connection in the background, so that events (asset packs' status updates) start to arrive.
    func connectInBackground() { client.connectInBackground() }

    /// Opens the connection now, throwing what the service or the socket said.
    func connect() throws { try Self.bridged { () throws(HostError) in try client.connect() } }

    /// Closes the connection for good: callbacks still waiting are not answered (the service offers them again),
    /// and nothing reconnects.
    func disconnect() { client.disconnect() }

    // MARK: Calls

    func schedule(_ download: Download) throws { try Self.bridged { () throws(HostError) in try client.expectOK(.schedule(download)) } }

    func startForeground(_ download: Download) throws {
        try Self.bridged { () throws(HostError) in try client.expectOK(.startForeground(download)) }
    }

    func cancel(_ download: Download) throws { try Self.bridged { () throws(HostError) in try client.expectOK(.cancel(download)) } }

    func currentDownloads() throws -> [BADownload] {
        let reply = try currentDownloadsReply()
        do {
            return try reply.downloads().map(\.object)
        } catch {
            throw Self.invalid("the service's reply to fetchCurrentDownloads: \(error)")
        }
    }

    private func currentDownloadsReply() throws -> DownloadsReply {
        try Self.bridged { () throws(HostError) in try client.currentDownloadsReply() }
    }

    func delegateChanged(isSet: Bool) { client.delegateChanged(isSet: isSet) }

    /// The app's own app group container, as the service reports it; nil when the service cannot be reached.
    var appContainer: URL? { client.appContainerPath.map { URL(fileURLWithPath: $0, isDirectory: true) } }

    /// The app group's container, as the service reports it.
    func container(forGroup group: String) -> URL? {
        client.containerPath(forGroup: group).map { URL(fileURLWithPath: $0, isDirectory: true) }
    }

    func acquireExclusiveControl(timeoutMilliseconds: Int64) throws {
        try Self.bridged { () throws(HostError) in try client.acquireExclusiveControl(timeoutMilliseconds: timeoutMilliseconds) }
    }

    func releaseExclusiveControl() { client.releaseExclusiveControl() }

    func setPlaying(_ playing: Bool) throws {
        try Self.bridged { () throws(HostError) in try client.setPlaying(playing) }
    }

    // MARK: Callbacks

    private static func deliver(_ event: AppEvent, unless client: AppClient) async {
        guard !client.isClosed, let delegate = BADownloadManager.shared.delegate else { return }
        switch event {
        case .began(let download): await delegate.downloadDidBegin(download.object)
        case .paused(let download): await delegate.downloadDidPause(download.object)
        case .progress(let download, let written, let total, let expected):
            await delegate.download(
                download.object, didWriteBytes: written, totalBytesWritten: total, totalBytesExpectedToWrite: expected)
        case .assetPack:
            break
        }
    }

    private static func deliver(_ callback: AppCallback, _ id: AppClient.CallbackID, on client: AppClient) async {
        // A callback of a transport the app closed is not answered: the service offers it again.
        guard !client.isClosed else { return }
        guard let delegate = BADownloadManager.shared.delegate else {
            client.answer(id, CallbackReply(handled: false))
            return
        }
        let call = DelegateCall()
        switch callback {
        // Once the method returned, the completion's ticket goes (for a finished download, the file, which Apple
        // deletes then too), and only then does the answer: a service killed in between still knows the completion
        // was delivered, and never hands it to the extension as well.
        case .finished(let download, let path):
            await DelegateCall.$current.withValue(call) {
                await delegate.download(download.object, finishedWithFileURL: URL(fileURLWithPath: path))
            }
            if !call.unhandled { unlink(path) }
            client.answer(id, CallbackReply(handled: !call.unhandled))
        case .failed(let download, let error, let ticket):
            await DelegateCall.$current.withValue(call) {
                await delegate.download(download.object, failedWithError: NSError(wire: error))
            }
            if !call.unhandled { unlink(ticket) }
            client.answer(id, CallbackReply(handled: !call.unhandled))
        case .challenge(let download, let challenge):
            await DelegateCall.$current.withValue(call) {
                await delegate.download(download.object, didReceive: challenge.object) { disposition, credential in
                    client.answer(
                        id,
                        CallbackReply(
                            handled: !call.unhandled, disposition: disposition.rawValue, user: credential?.user,
                            password: credential?.password))
                }
            }
        }
    }

    static func invalid(_ message: String) -> NSError { .backgroundAssets(.callerConnectionInvalid, message) }
}

/// Tells the transport whether the delegate implemented the method it just called: the protocol's default
/// implementations mark the call unhandled, and the service then wakes the extension instead, as Apple does for an
/// app whose delegate lacks the method. A task-local, so that the default challenge handler's task sees it too.
final class DelegateCall: Sendable {
    /// The delegate call running in this task.
    @TaskLocal static var current: DelegateCall?
    private let marked = Atomic(false)

    var unhandled: Bool { marked.load(ordering: .acquiring) }

    static func markUnhandled() { current?.markUnhandled() }

    /// The app's delegate did not handle this call: the service offers it to the extension instead.
    func markUnhandled() { marked.store(true, ordering: .releasing) }
}

