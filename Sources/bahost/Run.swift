import AppConfig
import ArgumentParser
import ExtensionRuntime
import Foundation
import Policy

/// `bahost run`: one extension window for one content request, reported.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load an extension, send it a content request, and report what it returned and how it ended.",
        discussion: """
            Exit status: 0 the extension returned and every download passed validation; 2 it returned but some \
            downloads were rejected; 3 budget exceeded; 4 crashed; 5 exited on its own; 6 killed for memory; \
            7 refused to load; 8 protocol violation; 64 bad arguments; 70 the host could not open a window.
            """)

    @Option(help: "The extension: a shared object exporting ba_extension_entry.")
    var plugin: String

    @Option(help: "The content request: install, update, periodic or language-change.")
    var event: String

    @Option(help: "The manifest file handed to the extension (a read-only copy, deleted when it returns).")
    var manifest: String

    @Option(help: "The app's Info.plist: its app group, allowances and allow list apply.")
    var infoPlist: String?

    @Option(help: "Seconds the window may run before extensionWillTerminate.")
    var budget: Double = 30

    @Option(help: "Seconds between extensionWillTerminate and the kill.")
    var grace: Double = 2

    @Option(help: "Resident memory limit of the extension's process, in MiB.")
    var memoryLimit: Int = 128

    @Flag(help: "Accept plain http URLs to loopback hosts (local test servers only).")
    var allowInsecureLoopback = false

    @Flag(help: "Print one JSON object instead of the report.")
    var json = false

    func validate() throws {
        guard ContentRequest(name: event) != nil else {
            throw ValidationError("--event must be one of: \(ContentRequest.allCases.map(\.name).joined(separator: ", "))")
        }
        guard budget > 0, grace >= 0, memoryLimit > 0 else {
            throw ValidationError("--budget and --memory-limit must be positive and --grace not negative")
        }
        guard FileManager.default.isReadableFile(atPath: manifest) else {
            throw ValidationError("cannot read the manifest \(manifest)")
        }
        guard FileManager.default.fileExists(atPath: plugin) else {
            throw ValidationError("no extension at \(plugin)")
        }
    }

    func run() throws {
        let request = ContentRequest(name: event)!
        let config: AppConfiguration?
        do {
            config = try infoPlist.map { path throws(AppConfigurationError) in
                try AppConfiguration(contentsOf: URL(fileURLWithPath: path))
            }
        } catch {
            throw ValidationError(error.description)
        }

        let rules = DownloadRules(
            appGroupIdentifier: config?.appGroupIdentifier, allowInsecureLoopback: allowInsecureLoopback)
        // Before the app's first launch its allowances restrict what the extension may schedule.
        let info = config.map {
            AppExtensionInfo(
                restrictedDownloadSizeRemaining: $0.initialRestrictions.downloadAllowance,
                restrictedEssentialDownloadSizeRemaining: $0.initialRestrictions.essentialDownloadAllowance)
        } ?? .unrestricted
        let services = InMemoryHostServices(
            lockPath: ExclusiveControlLock.path(forApp: config?.appIdentifier ?? "bahost.run")
        ) { DownloadValidation.check($0, for: nil, rules: rules) }

        let limits = WindowLimits(
            budget: .milliseconds(Int64(budget * 1000)), grace: .milliseconds(Int64(grace * 1000)),
            memoryBytes: Int64(memoryLimit) << 20)
        let outcome: WindowOutcome
        do {
            let manifestCopy = try ManifestCopy(of: manifest)
            defer { manifestCopy.removeFolder() }
            let window = try ExtensionWindow(pluginPath: plugin, limits: limits)
            let live = json ? nil : { (line: WindowLogLine) in Report.printLive(line) }
            outcome = try window.run(
                [.contentRequest(request, manifestPath: manifestCopy.path, info: info)], services: services,
                onLog: live)
        } catch {
            FileHandle.standardError.write(Data("bahost: \(error)\n".utf8))
            throw ExitCode(70)
        }

        let (accepted, rejected) = DownloadValidation.validate(outcome.returnedDownloads, for: request, rules: rules)
        services.adopt(accepted)
        let report = Report(
            plugin: plugin, request: request, outcome: outcome,
            returned: accepted.map(InMemoryHostServices.withUniqueIdentifier), rejected: rejected,
            scheduled: services.scheduled.filter { s in !accepted.contains { $0.identifier == s.identifier } })
        if json { report.printJSON() } else { report.printText() }
        throw ExitCode(report.exitCode)
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
