import AppConfig
import ArgumentParser
import ExtensionRuntime
import Foundation
import Engine
import Service
import Vocabulary

/// The full life cycle of `bahost run`: install the app in the queue, run its content request, then drain its
/// transfers and deliveries.
struct LifecycleRun {
    let plugin: String
    let request: ContentRequest
    let config: AppConfiguration
    let manifest: String?
    let window: WindowOptions
    let transfers: TransferOptions
    let allowInsecureLoopback: Bool
    let json: Bool

    func run() async throws -> Int32 {
        let reporter = EventReporter(json: json)
        guard let engine = transfers.openEngine(limits: window.limits, reporter: reporter) else { return 70 }
        // A metered network, sleep: as the service does (docs/DOWNLOADS.md).
        let bus = EngineOnSystemBus.follow(engine, quietWithoutBus: true) { Output.standardError("bahost: \($0)\n") }
        do {
            try engine.install(
                config, extensionPath: URL(fileURLWithPath: plugin).standardizedFileURL.path,
                allowInsecureLoopback: allowInsecureLoopback)
            let outcome = try await engine.contentRequest(
                request, appIdentifier: config.appIdentifier, localManifest: manifest)
            try await engine.drain([config.appIdentifier])
            bus?.stop()
            await engine.shutdown()
            return reporter.finish(contentRequest: outcome)
        } catch {
            bus?.stop()
            await engine.shutdown()
            Output.standardError("bahost: \(error)\n")
            return 70
        }
    }
}

/// `bahost resume`: what an interrupted run left, finished.
struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Finish what an interrupted host left: resume transfers and deliver completions.",
        discussion: """
            Partial files resume where they stopped, finished files are not fetched again, and completions not yet \
            delivered go to the app's extension. Exit status: 0 every download finished; 2 some failed; 70 the \
            queue could not be opened; 75 some completions could not be delivered (they stay pending).
            """)

    @Option(help: "Only this app (its CFBundleIdentifier).")
    var app: String?

    @OptionGroup var window: WindowOptions
    @OptionGroup var transfers: TransferOptions

    @Flag(help: "Print one JSON event per line.")
    var json = false

    func run() async throws {
        window.applySandbox()
        let reporter = EventReporter(json: json)
        guard let engine = transfers.openEngine(limits: window.limits, reporter: reporter) else { throw ExitCode(70) }
        do {
            let apps = try engine.installedApps().map(\.appIdentifier).filter { app == nil || $0 == app }
            try await engine.drain(apps)
            await engine.shutdown()
        } catch {
            await engine.shutdown()
            Output.standardError("bahost: \(error)\n")
            throw ExitCode(70)
        }
        throw ExitCode(reporter.finish(contentRequest: nil))
    }
}
