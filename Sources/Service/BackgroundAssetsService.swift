import CBAExtension
import Desktop
import ExtensionRuntime
import Foundation
import Engine
import Logging
import PersonSettings
import ServiceWire
import Synchronization
import SystemBus
import Vocabulary

/// The per-user service behind `bahost daemon`: it owns the durable queue of every installed app, performs their
/// transfers, routes completions to a running app's delegate or to the extension, runs periodic content requests,
/// and answers apps and the command line on its socket.
public final class BackgroundAssetsService: Sendable {
    let settings: ServiceSettings
    let engine: HostEngine
    let sessions: AppSessions
    let clock = ServiceClock()
    let logger: Logger
    private let listener: ServiceListener
    /// Whether systemd passed the listening socket (socket activation).
    var listenerActivated: Bool { listener.activated }
    let overrides = Mutex(SystemConditions())
    let scheduler: PeriodicScheduler
    /// What the extensions' sandbox can do on this machine, probed at start.
    let sandbox = SandboxSupport.probe()
    /// When delivered downloads were last pruned, by the service's clock.
    private let lastPrune = Mutex<Date?>(nil)
    /// What the declared-apps folders hold and what was last done about them.
    let declaredAppsStatus = Mutex(DeclaredAppsStatus())
    /// The system bus's watch while the service runs.
    let systemBus = Mutex<SystemBusWatch?>(nil)
    /// The person's settings and what the machine says, which decide what background downloads wait for.
    let person: PersonPolicy
    /// Each installed Flatpak app's own socket, by app (`openFlatpakSockets`).
    let flatpakListeners = Mutex<[String: ServiceListener]>([:])
    /// The desktop (the session bus), connected at the first launch that waits; `.some(nil)` once found absent.
    private let desktopShell = Mutex<DesktopShell??>(nil)
    /// Apps whose foreground downloads the desktop shows now (`showForegroundProgress`).
    let foregroundFollowers = Mutex<Set<String>>([])

    public init(settings: ServiceSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        let sessions = AppSessions(callbackTimeout: settings.appCallbackTimeout)
        self.sessions = sessions
        let box = EngineObserverBox()
        listener = try ServiceListener(path: settings.socketPath)
        do {
            engine = try HostEngine(
                dataRoot: settings.dataRoot, settings: settings.engine, router: sessions, observe: { box.observe($0) })
        } catch {
            listener.stop()
            throw error
        }
        scheduler = PeriodicScheduler(policy: settings.periodic, interval: settings.schedulerInterval)
        person = PersonPolicy(file: settings.settingsFile)
        box.service.withLock { $0 = self }
    }

    /// Serves until the task is cancelled (the daemon's graceful shutdown), then stops with nothing lost: the
    /// socket closes, running transfers stop with their partial files kept, and the queue is left as it stands.
    public func run() async throws {
        // The person's settings before the first connection: no download starts under the defaults by mistake.
        if let problem = person.reload() {
            logger.error("settings: \(problem); the defaults are in force until it is fixed")
        }
        applyPersonRules(after: nil)
        start(listener)
        openFlatpakSockets()
        logger.info("listening", metadata: [
            "socket": "\(settings.socketPath)", "data": "\(settings.dataRoot.url.path)",
            "activated": "\(listener.activated)",
        ])
        ServiceManager.notify("READY=1\nSTATUS=listening on \(settings.socketPath)")
        logger.info("sandbox: \(sandbox.summary)")
        for missing in sandbox.missing { logger.warning("sandbox: \(missing)") }
        let bus = watchSystemBus()
        let gameMode = watchGameMode()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.followSettingsFile() }
            group.addTask { await self.followPersonRules() }
            group.addTask {
                do {
                    try await self.engine.serve()
                } catch {
                    self.logger.error("the transfer loop stopped: \(error)")
                }
            }
            group.addTask { await self.scheduler.run(self) }
            group.addTask { await self.followDeclaredApps() }
            await group.waitForAll()
        }
        ServiceManager.notify("STOPPING=1")
        bus?.stop()
        gameMode?.stop()
        desktopShell.withLock { $0??.stop() }
        listener.stop()
        closeFlatpakSockets()
        sessions.closeAll()
        await engine.shutdown()
        logger.info("stopped")
    }

    /// Accepts connections on `listener`: each a session of its own, read on its own thread.
    func start(_ listener: ServiceListener) {
        listener.start(runtimeDirectory: settings.runtimeDirectory, refused: { [logger] pid, why in
            logger.notice("refused a connection: \(why.printable(limit: 500))", metadata: ["pid": "\(pid)"])
        }) { [self] socket, pid, flatpak in
            let session = ClientSession(
                socket: socket, peerPID: pid, flatpak: flatpak,
                limits: .init(unreadBytes: settings.unreadBytesLimit, stall: settings.unreadTimeout)
            ) { [logger] reason in
                logger.notice("closed a connection that does not read what the service sends: \(reason)", metadata: [
                    "pid": "\(pid)",
                ])
            }
            sessions.add(session)
            session.startReading(
                immediate: { session, id, request in self.immediate(request, id: id, from: session) },
                handle: { session, id, request in await self.handle(request, id: id, from: session) },
                ended: { session in self.ended(session) })
        }
    }

    /// The desktop's notifications and dock, on the session bus; nil without one (then only the terminal says what
    /// happens). Connected once, at first use.
    func desktop() -> DesktopShell? {
        desktopShell.withLock { shell in
            if shell == nil {
                shell = .some(DesktopShell.connect())
                if shell! == nil { logger.info("no session bus: launches show their progress in the terminal only") }
            }
            return shell!
        }
    }

    /// Follows NetworkManager and logind on the system bus for the engine; nil without a system bus.
    private func watchSystemBus() -> SystemBusWatch? {
        let watch = EngineOnSystemBus.follow(engine, power: { [person] in person.powerChanged($0) }) { [logger] in
            logger.info("\($0)")
        }
        systemBus.withLock { $0 = watch }
        return watch
    }

    /// Prunes delivered downloads older than the retention, at most once an hour (the periodic scheduler's turns
    /// call it), so that a service that delivers for months keeps a bounded queue.
    func pruneDeliveredIfDue() {
        let now = clock.now
        let due = lastPrune.withLock { last in
            guard last.map({ now.timeIntervalSince($0) >= 3600 }) ?? true else { return false }
            last = now
            return true
        }
        guard due else { return }
        do {
            let pruned = try engine.pruneDelivered(before: now.addingTimeInterval(-settings.deliveredRetention))
            if pruned > 0 { logger.info("pruned \(pruned) delivered downloads") }
        } catch {
            logger.error("pruning delivered downloads failed: \(error)")
        }
    }

    // MARK: Requests

    /// An introduced app's own requests, answered at once on the connection's thread; nil for anything else.
    func immediate(_ request: ServiceRequest, id: UInt64, from session: ClientSession) -> ClientSession.Answer? {
        guard let hello = session.hello, hello.role == .app, RequestRoute(request) == .appImmediate else { return nil }
        let app = hello.appIdentifier ?? ""
        if case .currentDownloads = request, (try? engine.app(app)) != nil {
            // Written straight from the queue's rows: the same frame as the values `appRequest` replies.
            let reply = DownloadsReply.Builder()
            if let error = engine.downloads(for: app).forEachCurrentDownload({ reply.append($1, key: $0) }) {
                return .reply(.failure(error))
            }
            return .frame(reply.frame(answering: id))
        }
        return .reply(appRequest(request, from: session, app: app))
    }

    func handle(_ request: ServiceRequest, id: UInt64, from session: ClientSession) async -> ServiceReply {
        guard let hello = session.hello else {
            guard case .hello(let hello) = request else {
                return .failure(HostError(BA_ERROR_CALLER_CONNECTION_INVALID, "the first message must be hello"))
            }
            return introduce(session, hello)
        }
        let route = RequestRoute(request)
        guard route.allows(hello.role) else {
            return .failure(HostError(
                BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED, "a \(hello.role.rawValue) connection cannot make that request"))
        }
        switch (route, request) {
        case (.hello, _):
            return .failure(HostError(BA_ERROR_CALLER_CONNECTION_INVALID, "hello was already said"))
        case (.control, .control(let command)):
            return await control(command, id: id, from: session)
        case (.appAssetPack, _):
            return await assetPackRequest(request, app: hello.appIdentifier ?? "")
        default:
            return appRequest(request, from: session, app: hello.appIdentifier ?? "")
        }
    }

    /// `AssetPackManager`'s calls. They may wait for a download (`ensureLocalAvailability`) or a server
    /// (`checkForUpdates`), so they run on a task, never on the connection's thread.
    private func assetPackRequest(_ request: ServiceRequest, app: String) async -> ServiceReply {
        do {
            switch request {
            case .assetPacks:
                let decoder = JSONEncoder()
                return .assetPacks(try await engine.offeredPacks(app).map { entry in
                    AssetPackInfo(
                        id: entry.id, version: entry.version, downloadSize: entry.downloadSize,
                        userInfo: try entry.userInfo.map { Array(try decoder.encode($0)) }, language: entry.language)
                })
            case .assetPackStatus(let id):
                return .assetPackStatus(try await engine.packStatus(app, id: id))
            case .ensureAssetPack(let id, let requireLatest):
                showForegroundProgress(app)
                try await engine.ensurePack(app, id: id, requireLatest: requireLatest)
                return .ok
            case .cancelAssetPackDownload(let id):
                try engine.cancelPackDownload(app, id: id)
                return .ok
            case .checkForAssetPackUpdates:
                let (updating, removed) = try await engine.checkForPackUpdates(app)
                return .assetPackUpdates(updating: updating, removed: removed)
            case .removeAssetPack(let id):
                try engine.removePack(app, id: id)
                return .ok
            case .assetPackLanguages:
                let (primary, resolved) = try engine.packLanguages(app)
                return .assetPackLanguages(primary: primary, resolved: resolved)
            case .setAssetPackLanguage(let language):
                try engine.setPackLanguage(app, language)
                return .ok
            case .reconcileAssetPackLanguages(let preferred):
                let (updating, removed) = try await engine.reconcilePackLanguages(app, preferred: preferred)
                return .assetPackUpdates(updating: updating, removed: removed)
            default:
                return .failure(HostError(BA_ERROR_CALLER_CONNECTION_INVALID, "not an asset pack request"))
            }
        } catch let error as HostError {
            return .failure(error)
        } catch {
            return .failure(HostError.bahost("\(error)"))
        }
    }

    private func introduce(_ session: ClientSession, _ hello: Hello) -> ServiceReply {
        guard hello.protocolVersion == ServiceProtocol.version else {
            return .failure(HostError(
                BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED,
                "the client speaks protocol \(hello.protocolVersion); this service speaks \(ServiceProtocol.version)"))
        }
        if let flatpak = session.flatpak { return introduce(session, hello, fromFlatpak: flatpak) }
        guard hello.role == .app else {
            session.introduce(hello)
            return .hello(HelloReply(serviceVersion: Self.version))
        }
        guard let appIdentifier = hello.appIdentifier, let app = try? engine.app(appIdentifier) else {
            return .failure(HostError(
                BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED,
                "no app '\(hello.appIdentifier ?? "")' is installed: bahost install APP_DIR first"))
        }
        guard app.sandboxHome == nil else {
            logger.notice("refused a native process posing as a Flatpak app", metadata: [
                "app": "\(appIdentifier)", "pid": "\(session.peerPID)",
            ])
            return .failure(HostError(
                BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED,
                "\(appIdentifier) is a Flatpak app: only a process inside its sandbox (flatpak run \(appIdentifier)) "
                    + "may act as it"))
        }
        guard (try? engine.isLaunchedProcess(session.peerPID, of: appIdentifier)) == true else {
            logger.notice("refused a process posing as an app", metadata: ["app": "\(appIdentifier)", "pid": "\(session.peerPID)"])
            return .failure(HostError(
                BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED,
                "process \(session.peerPID) was not started by 'bahost launch \(appIdentifier) -- COMMAND' (nor by a process that was): an app's identity is proved by its launch, not declared"))
        }
        session.introduce(hello)
        logger.info("app connected", metadata: ["app": "\(appIdentifier)", "pid": "\(session.peerPID)"])
        return .hello(HelloReply(
            serviceVersion: Self.version, exclusiveControlLockPath: ExclusiveControlLock.path(forApp: appIdentifier),
            appGroupIdentifier: app.appGroupIdentifier,
            containerPath: settings.dataRoot.container(for: app.appGroupIdentifier).path))
    }

    /// An app's own downloads only: requests go through the same queue and policy as its extension's.
    private func appRequest(_ request: ServiceRequest, from session: ClientSession, app appIdentifier: String)
        -> ServiceReply
    {
        guard let app = try? engine.app(appIdentifier) else {
            return .failure(HostError(BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED, "the app '\(appIdentifier)' was uninstalled"))
        }
        let services = engine.downloads(for: appIdentifier)
        func ownGroup(_ download: Download) -> ServiceReply? {
            guard download.applicationGroupIdentifier != app.appGroupIdentifier else { return nil }
            return .failure(HostError(
                BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED,
                "the app group '\(download.applicationGroupIdentifier)' is not this app's ('\(app.appGroupIdentifier)')"))
        }
        func reply(_ result: Result<Void, HostError>) -> ServiceReply {
            switch result {
            case .success: .ok
            case .failure(let error): .failure(error)
            }
        }
        switch request {
        case .setPlaying(let playing):
            person.playing(ObjectIdentifier(session), app: playing ? appIdentifier : nil)
            return .ok
        case .setDelegate(let set):
            session.setDelegate(set)
            // A delegate arriving may be what pending completions wait for.
            if set { engine.wake() }
            return .ok
        case .schedule(let download):
            return ownGroup(download) ?? reply(services.schedule(download))
        case .startForeground(let download):
            if let refusal = ownGroup(download) { return refusal }
            let result = services.startForeground(download)
            if case .success = result, app.showsDownloadProgress { showForegroundProgress(appIdentifier) }
            return reply(result)
        case .cancel(let download):
            return ownGroup(download) ?? reply(services.cancel(download))
        case .currentDownloads:
            // Only a fetch that reached the service before its connection's hello was taken comes here; the others
            // are written from the rows by `immediate`.
            switch services.currentDownloads() {
            case .success(let downloads): return .downloads(downloads)
            case .failure(let error): return .failure(error)
            }
        default:
            return .failure(HostError(BA_ERROR_CALLER_CONNECTION_INVALID, "not an app request"))
        }
    }

    private func ended(_ session: ClientSession) {
        person.playing(ObjectIdentifier(session), app: nil)
        let last = sessions.remove(session)
        // Apple: a foreground download stays in the foreground until the app's download manager disconnects.
        if last, let app = session.appIdentifier { try? engine.appDisconnected(app) }
    }

    // MARK: Events

    func observe(_ event: LifecycleEvent) {
        sessions.forward(event)
        switch event {
        case .window(let purpose, let outcome, let app):
            // Every window counts against the app's daily runtime.
            let now = clock.now
            try? engine.updateSchedule(app) { settings.periodic.charge(outcome.elapsed.inSeconds, to: &$0, now: now) }
            logger.info("window", metadata: [
                "app": "\(app)", "purpose": "\(purpose.name)", "stop": "\(outcome.stopReason.kind)",
                "seconds": "\(outcome.elapsed.inSeconds)",
            ])
            for line in outcome.log {
                logger.info("[\(line.source.rawValue)] \(line.message.printable())", metadata: ["app": "\(app)"])
            }
        case .failed(let download, let error):
            logger.notice("download failed", metadata: ["app": "\(download.appIdentifier)", "id": "\(download.identifier)", "error": "\(error)"])
        case .queueFailed(let message):
            logger.error("the queue failed: \(message)")
        case .deliveryFailed(let app, let message, let delay):
            logger.error("delivery failed", metadata: [
                "app": "\(app)", "error": "\(message)", "retryInSeconds": "\(delay?.inSeconds ?? 0)",
            ])
        default:
            break
        }
    }

    static let version = BahostVersion.release
}

/// Lets the engine's observer reach the service, which is made after the engine.
private final class EngineObserverBox: Sendable {
    let service = Mutex<BackgroundAssetsService?>(nil)

    func observe(_ event: LifecycleEvent) {
        service.withLock { $0 }?.observe(event)
    }
}
