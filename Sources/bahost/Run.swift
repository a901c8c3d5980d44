import AppConfig
import ArgumentParser
import ExtensionRuntime
import Foundation
import Engine
import HostVocabulary
import Vocabulary

/// `bahost run`: Apple's life cycle for one app and one content request.
struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run an extension's content request and, for an app, its downloads and their delivery.",
        discussion: """
            With --info-plist, the whole life cycle: fetch the manifest named by BAManifestURL (or take --manifest), \
            run the extension's content request, apply the app's policy, download what it returned (essential \
            first), and deliver each finished or failed download back to the extension in a fresh window. Without \
            --info-plist, or with --window-only, only the extension's window, reported.

            Exit status: 0 the extension returned and every download finished; 2 some downloads were rejected or \
            failed; 3 budget exceeded; 4 crashed; 5 exited on its own; 6 killed for memory; 7 refused to load; \
            8 protocol violation; 9 the manifest could not be fetched; 64 bad arguments; 70 the host could not \
            open a window or its queue, or its extension runner failed; 75 some completions could not be \
            delivered (their deliveries failed 3 times in a row): they stay pending for `bahost resume`; 74 the \
            output could not be written. A reader that closes the output (`| head`) ends the run as SIGPIPE ends \
            other tools; `bahost resume` finishes what it left.
            """)

    @Option(help: "The extension: a shared object exporting ba_extension_entry.")
    var plugin: String

    @Option(help: "The content request: install, update, periodic or language-change.")
    var event: String

    @Option(help: "A local manifest to hand the extension instead of fetching BAManifestURL.")
    var manifest: String?

    @Option(help: "The app's Info.plist: its identity, manifest URL, allowances and allow list.")
    var infoPlist: String?

    @Flag(
        help: """
            Run only the extension's window and report it; download nothing. The window gets the app group's \
            container (under --data-root) when --info-plist names the group; without an Info.plist there is no \
            group, and the extension can write nothing.
            """)
    var windowOnly = false

    @OptionGroup var window: WindowOptions
    @OptionGroup var transfers: TransferOptions

    @Flag(help: "Accept plain http URLs to loopback hosts (local test servers only).")
    var allowInsecureLoopback = false

    @Flag(help: "Print JSON: one object for a window-only run, else one event per line.")
    var json = false

    func validate() throws {
        guard ContentRequest(name: event) != nil else {
            throw ValidationError("--event must be one of: \(ContentRequest.allCases.map(\.name).joined(separator: ", "))")
        }
        try window.validate()
        if let manifest, !FileManager.default.isReadableFile(atPath: manifest) {
            throw ValidationError("cannot read the manifest \(manifest)")
        }
        guard FileManager.default.fileExists(atPath: plugin) else { throw ValidationError("no extension at \(plugin)") }
        if infoPlist == nil || windowOnly {
            guard manifest != nil else { throw ValidationError("a window-only run needs --manifest") }
        }
    }

    func run() async throws {
        window.applySandbox()
        let request = ContentRequest(name: event)!
        let config: AppConfiguration?
        do {
            config = try infoPlist.map { path throws(AppConfigurationError) in
                try AppConfiguration(contentsOf: URL(fileURLWithPath: path))
            }
        } catch {
            throw ValidationError(error.description)
        }
        if let config, config.hasManagedAssetPacks, !windowOnly {
            // A managed extension has no content request of its own: the service asks it about packs.
            throw ValidationError(
                "\(config.appIdentifier) has managed asset packs (BAHasManagedAssetPacks): install it with `bahost install`, whose service manages its packs, or run its window alone with --window-only")
        }
        if let config, !windowOnly {
            let code = try await LifecycleRun(
                plugin: plugin, request: request, config: config, manifest: manifest, window: window,
                transfers: transfers, allowInsecureLoopback: allowInsecureLoopback, json: json
            ).run()
            throw ExitCode(code)
        }
        try runWindowOnly(request, config: config)
    }

    private func runWindowOnly(_ request: ContentRequest, config: AppConfiguration?) throws {
        let result: WindowOnlyRequest.Result
        do {
            let manifestCopy = try ManifestCopy(of: manifest!)
            defer { manifestCopy.removeFolder() }
            let live = json ? nil : { (line: WindowLogLine) in Report.printLive(line) }
            result = try WindowOnlyRequest(
                extensionPath: plugin, request: request, config: config, allowInsecureLoopback: allowInsecureLoopback,
                limits: window.limits, appGroup: try config.map(appGroup)
            ).run(manifestPath: manifestCopy.path, onLog: live)
        } catch {
            Output.standardError("bahost: \(error)\n")
            throw ExitCode(70)
        }
        let report = Report(
            plugin: plugin, request: request, outcome: result.outcome, returned: result.accepted,
            rejected: result.rejected, scheduled: result.scheduled)
        if json { report.printJSON() } else { report.printText() }
        throw ExitCode(report.exitCode)
    }

    /// The app group's container in the data root, made if missing: the one the whole life cycle uses.
    private func appGroup(_ config: AppConfiguration) throws -> ExtensionWindow.AppGroup {
        let root = transfers.root
        try root.prepare(appGroupIdentifier: config.appGroupIdentifier)
        return ExtensionWindow.AppGroup(
            identifier: config.appGroupIdentifier, container: root.container(for: config.appGroupIdentifier).path)
    }
}

/// The extension window's limits, shared by the commands that open windows.
struct WindowOptions: ParsableArguments {
    @Option(help: "Seconds a window may run before extensionWillTerminate.")
    var budget: Double = 30

    @Option(help: "Seconds between extensionWillTerminate and the kill.")
    var grace: Double = 2

    @Option(help: "Resident memory limit of the extension's process, in MiB.")
    var memoryLimit: Int = 128

    @Option(
        help: """
            The extensions' sandbox: on, or off to debug an extension it stops (the extension then has every right \
            of your user).
            """)
    var sandbox: SandboxSwitch = .on

    enum SandboxSwitch: String, ExpressibleByArgument { case on, off }

    /// Applies --sandbox to every window this process opens (through the runner's environment), and says loudly
    /// what is not protected: the switch turned off, or a protection this machine's kernel lacks.
    func applySandbox() {
        if sandbox == .off { setenv("BAHOST_SANDBOX", "off", 1) }
        for missing in SandboxSupport.probe().missing {
            Output.standardError("bahost: WARNING: \(missing)\n")
        }
    }

    func validate() throws {
        guard budget > 0, grace >= 0, memoryLimit > 0 else {
            throw ValidationError("--budget and --memory-limit must be positive and --grace not negative")
        }
    }

    var limits: WindowLimits {
        WindowLimits(
            budget: .milliseconds(Int64(budget * 1000)), grace: .milliseconds(Int64(grace * 1000)),
            memoryBytes: Int64(memoryLimit) << 20)
    }
}

/// How the host downloads, shared by the commands that download.
struct TransferOptions: ParsableArguments {
    @Option(help: "Where the queue, partial files and app containers live (default $XDG_DATA_HOME/bahost).")
    var dataRoot: String?

    @Option(help: "A PEM file of certificate authorities to trust besides the system's (private CDNs, tests).")
    var caFile: String?

    @Option(help: "Transfers on the network at once (one whose body has arrived frees its slot while it is synced).")
    var maxConcurrent: Int = 4

    @Option(help: "Transfers on the network at once to one host.")
    var maxPerHost: Int = 2

    @Option(help: "Seconds before the first retry of a transient failure; each later retry doubles it (with jitter).")
    var retryDelay: Double = 1

    @Option(help: "Attempts per download before a transient failure is final (an attempt that found no network is not one).")
    var maxAttempts: Int = 8

    @Option(help: "Seconds a download may wait for the network before it fails (default 7 days, as URLSession's).")
    var resourceTimeout: Double = 7 * 86_400

    @Option(help: "Seconds a server may stay silent mid-response before the attempt is retried.")
    var readTimeout: Double = 30

    @Option(help: "Seconds to keep trying to connect to a server before waiting for the network.")
    var connectTimeout: Double = 10

    @Option(help: "The most the downloads may receive together, in bytes a second (K, M, G: 1024s, as curl's --limit-rate); 0 for no limit. The daemon's changes at run time with `bahost debug max-rate`.")
    var maxRate: ByteRate = ByteRate(bytesPerSecond: 0)

    @Flag(inversion: .prefixedNo, help: "Whether background downloads (neither essential nor foreground) use only what the machine's other traffic leaves idle, measured by the delay they add.")
    var backgroundYield = true

    @Option(help: "Threads that read the network and write what arrives (1 to 64; more for many fast https transfers).")
    var networkThreads: Int = 1

    func validate() throws {
        guard (1...64).contains(networkThreads) else { throw ValidationError("--network-threads must be 1 to 64") }
        guard resourceTimeout >= 1 else { throw ValidationError("--resource-timeout must be 1 second or more") }
    }

    func settings(limits: WindowLimits) -> HostEngine.Settings {
        HostEngine.Settings(
            additionalCAFile: caFile, connectTimeout: .milliseconds(Int64(connectTimeout * 1000)),
            readTimeout: .milliseconds(Int64(readTimeout * 1000)), retryDelay: .milliseconds(Int64(retryDelay * 1000)),
            maximumAttempts: maxAttempts, limits: limits, maximumConcurrentTransfers: maxConcurrent,
            maximumTransfersPerHost: maxPerHost, networkThreads: networkThreads,
            resourceTimeout: .milliseconds(Int64(resourceTimeout * 1000)), maximumRate: maxRate.limit,
            backgroundYields: backgroundYield)
    }

    var root: DataRoot { dataRoot.map(DataRoot.init) ?? .standard }

    /// The engine over the data root's queue, or nil after saying why it cannot be opened.
    func openEngine(limits: WindowLimits, reporter: EventReporter) -> HostEngine? {
        do {
            return try HostEngine(dataRoot: root, settings: settings(limits: limits), observe: reporter.observe)
        } catch {
            Output.standardError("bahost: cannot open the queue in \(root.url.path): \(error)\n")
            return nil
        }
    }
}

/// The read-only copy of the manifest that the extension sees, in a folder of its own; the window deletes the file.
struct ManifestCopy {
    let folder: URL
    let path: String

    init(of source: String) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("bahost-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        path = folder.appendingPathComponent("manifest").path
        try FileManager.default.copyItem(atPath: source, toPath: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: path)
    }

    func removeFolder() { try? FileManager.default.removeItem(at: folder) }
}

/// A rate in bytes a second, as curl's `--limit-rate` reads one: a number, with K, M or G for 1024s of bytes.
struct ByteRate: ExpressibleByArgument {
    let bytesPerSecond: Int64

    init(bytesPerSecond: Int64) { self.bytesPerSecond = bytesPerSecond }

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        if text == "off" || text == "none" {
            bytesPerSecond = 0
            return
        }
        let units: [Character: Double] = ["k": 1024, "m": 1024 * 1024, "g": 1024 * 1024 * 1024]
        let unit = text.last.flatMap { units[$0] }
        guard let number = Double(unit == nil ? text : String(text.dropLast())), number >= 0, number.isFinite,
            number * (unit ?? 1) < Double(Int64.max)
        else { return nil }
        bytesPerSecond = Int64(number * (unit ?? 1))
    }

    /// Nil for no limit.
    var limit: Int64? { bytesPerSecond > 0 ? bytesPerSecond : nil }

    var defaultValueDescription: String { bytesPerSecond == 0 ? "0 (no limit)" : "\(bytesPerSecond)" }
}
