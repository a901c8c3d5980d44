import ArgumentParser
import Foundation
import Logging
import Service
import ServiceLifecycle
import ServiceWire

/// `bahost daemon`: the per-user service.
struct Daemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run the per-user Background Assets service that apps and the bahost commands talk to.",
        discussion: """
            Owns the durable queue of every installed app: performs transfers, delivers completions to a running \
            app's delegate or else to its extension, and sends periodic content requests on a cadence that follows \
            each app's launches, skipping them in power-saver mode, on battery below --low-battery, on a metered \
            network, with the app's background refresh off, or once its daily runtime budget is spent. \
            It follows the folders where packages declare apps (bahost/apps in the XDG data folders): a new \
            app is installed, a new CFBundleVersion updated, a folder gone for good uninstalled. \
            SIGTERM or SIGINT stops it gracefully; what was in flight resumes at the next start. \
            Install it as a systemd user unit with Support/systemd/bahost.service.
            """)

    @Option(help: "The socket to listen on (default $BAHOST_SOCKET, else $XDG_RUNTIME_DIR/bahost/service.sock).")
    var socket: String?

    @OptionGroup var window: WindowOptions
    @OptionGroup var transfers: TransferOptions

    @Option(help: "Hours between periodic content requests for an app used now and then (half for daily use, four times for rare).")
    var periodicInterval: Double = 12

    @Option(help: "Seconds of extension runtime per app per day.")
    var dailyRuntime: Double = 600

    @Option(help: "Skip periodic requests on battery below this percentage.")
    var lowBattery: Int = 20

    @Flag(inversion: .prefixedNo, help: "Skip periodic requests on a metered network.")
    var skipWhenMetered = true

    @Flag(inversion: .prefixedNo, help: "Skip periodic requests in power-saver mode.")
    var skipInPowerSaver = true

    @Option(help: "Days a delivered download stays in the queue (and in bahost debug downloads) before it is pruned.")
    var keepDeliveredDays: Double = 7

    @Option(help: "Seconds between the periodic scheduler's looks at the apps.")
    var schedulerInterval: Double = 60

    @Option(help: ArgumentHelp(
        "Seconds to wait for an app's delegate to answer a callback.",
        discussion: "A completion whose callback takes longer stays with the app until the method returns or the process ends; a challenge not answered in time goes to the extension."))
    var appCallbackTimeout: Double = 30

    @Option(help: ArgumentHelp(
        "Bytes of events the service keeps for a client that is not reading them before it closes the connection.",
        discussion: "Events an app, or a command following an install, has not read yet. No sender in the service "
            + "waits for a client to read."))
    var maxUnreadBytes: Int = ServiceSettings.standardUnreadBytesLimit

    @Option(help: "Seconds a client may read none of what waits for it before the service closes the connection.")
    var unreadTimeout: Double = ServiceSettings.standardUnreadTimeout.inSeconds

    @Option(help: "Where power supplies are read (sysfs).")
    var sysfsRoot: String = "/sys"

    @Flag(help: "Accept the development commands: bahost debug clock and bahost debug conditions.")
    var development = false

    @Flag(help: "Accept plain http URLs to loopback hosts (local test servers only).")
    var allowInsecureLoopback = false

    @Option(help: ArgumentHelp(
        "A folder where packages declare apps, instead of the XDG ones (repeat for more, the first wins).",
        discussion: "By default $XDG_DATA_HOME/bahost/apps, then bahost/apps in each of $XDG_DATA_DIRS."))
    var appsFolder: [String] = []

    @Option(help: ArgumentHelp(
        "A Flatpak installation whose apps may declare themselves (repeat for more, the first wins).",
        discussion: """
            By default the user's ($FLATPAK_USER_DIR, else $XDG_DATA_HOME/flatpak) and the system's \
            ($FLATPAK_SYSTEM_DIR, else /var/lib/flatpak); none when --apps-folder is given without this.
            """))
    var flatpakInstallation: [String] = []

    @Option(help: ArgumentHelp(
        "Where the session that shares packs with peers listens, once `peers.share` names someone.",
        discussion: "libtorrent's listen_interfaces; an 's' port is for the household's TLS swarms. Local Service "
            + "Discovery announces the ports on the network; libtorrent tries the next when one is taken "
            + "(docs/PEERS.md)."))
    var peerListen: String = "0.0.0.0:6881,[::]:6881,0.0.0.0:6882s,[::]:6882s"

    @Option(help: "Seconds a pack's swarm may find no new piece before its download falls back to HTTP.")
    var peerStallSeconds: Double = 30

    @Option(help: "Seconds a declared app's folder must look the same before the service acts on it.")
    var settleSeconds: Double = 1

    @Option(help: "Seconds a declared app's folder must stay gone before the service uninstalls the app.")
    var removalGraceSeconds: Double = 10

    func validate() throws {
        try window.validate()
        guard periodicInterval > 0, dailyRuntime >= 0, schedulerInterval > 0, (0...100).contains(lowBattery) else {
            throw ValidationError("--periodic-interval and --scheduler-interval must be positive, --daily-runtime not negative, --low-battery 0...100")
        }
        guard keepDeliveredDays >= 0 else { throw ValidationError("--keep-delivered-days must not be negative") }
        guard appCallbackTimeout > 0 else { throw ValidationError("--app-callback-timeout must be positive") }
        guard maxUnreadBytes > 0, unreadTimeout > 0 else {
            throw ValidationError("--max-unread-bytes and --unread-timeout must be positive")
        }
        guard peerStallSeconds > 0, !peerListen.isEmpty else {
            throw ValidationError("--peer-stall-seconds must be positive and --peer-listen not empty")
        }
        guard settleSeconds >= 0, removalGraceSeconds >= 0 else {
            throw ValidationError("--settle-seconds and --removal-grace-seconds must not be negative")
        }
    }

    func run() async throws {
        window.applySandbox()
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "bahost.daemon")
        logger.logLevel = .info
        var engine = transfers.settings(limits: window.limits)
        engine.peerListen = peerListen
        engine.peerStall = .milliseconds(Int64(peerStallSeconds * 1000))
        let settings = ServiceSettings(
            socketPath: socket ?? ServiceProtocol.defaultSocketPath, dataRoot: transfers.root,
            engine: engine,
            periodic: PeriodicPolicy(
                interval: periodicInterval * 3600, dailyRuntime: dailyRuntime, lowBatteryPercent: lowBattery,
                skipWhenMetered: skipWhenMetered, skipInPowerSaver: skipInPowerSaver),
            schedulerInterval: .milliseconds(Int64(schedulerInterval * 1000)), sysfsRoot: sysfsRoot,
            development: development, allowInsecureLoopback: allowInsecureLoopback,
            deliveredRetention: keepDeliveredDays * 86400,
            appCallbackTimeout: .milliseconds(Int64(appCallbackTimeout * 1000)),
            declaredAppFolders: appsFolder.isEmpty
                ? DeclaredAppFolders.standard().roots
                : appsFolder.map { URL(fileURLWithPath: $0).standardizedFileURL.path },
            flatpakInstallations: !flatpakInstallation.isEmpty
                ? flatpakInstallation.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
                : appsFolder.isEmpty ? DeclaredAppFolders.standard().flatpakInstallations : [],
            declaredAppSettle: .milliseconds(Int64(settleSeconds * 1000)),
            declaredAppRemovalGrace: .milliseconds(Int64(removalGraceSeconds * 1000)),
            unreadBytesLimit: maxUnreadBytes, unreadTimeout: .milliseconds(Int64(unreadTimeout * 1000)))
        let service: BackgroundAssetsService
        do {
            service = try BackgroundAssetsService(settings: settings, logger: logger)
        } catch {
            Output.standardError("bahost: cannot start the service: \(error)\n")
            throw ExitCode(70)
        }
        let group = ServiceGroup(
            services: [DaemonService(service: service)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
    }
}

/// The service under swift-service-lifecycle: a graceful shutdown cancels it, and it stops with nothing lost.
private struct DaemonService: ServiceLifecycle.Service {
    let service: BackgroundAssetsService

    func run() async throws {
        try await cancelWhenGracefulShutdown { try await service.run() }
    }
}
