@_exported import ExtensionRuntime
import Foundation
@_exported import Vocabulary
@_exported import Policy

/// Runs an extension the way bahost does, in its own process under a budget, so that its authors can assert on the
/// outcome in their own tests (XCTest or Swift Testing):
///
/// ```swift
/// let harness = ExtensionHarness(plugin: ExtensionHarness.builtProduct("MyExtension"), budget: .seconds(2))
/// let run = try harness.contentRequest(.install, manifest: Data(#"{"assets": []}"#.utf8))
/// try run.requireReturned(within: .milliseconds(500))
/// #expect(run.downloads.map(\.identifier) == ["level-1"])
/// ```
///
/// The harness needs `bahost-extension-runner`: add `.product(name: "bahost-extension-runner", package: "bahost")`
/// to your test target's dependencies so that it is built beside your tests, or set `BAHOST_RUNNER`.
public struct ExtensionHarness: Sendable {
    /// The extension's shared object.
    public var plugin: String
    /// The window's budget, grace period and memory limit.
    public var limits: WindowLimits
    /// The app group downloads must name; nil accepts any.
    public var appGroupIdentifier: String?
    /// Accept plain http to loopback hosts, as `bahost run --allow-insecure-loopback` does.
    public var allowInsecureLoopback: Bool

    /// A harness for the extension at `plugin`, run in windows of `budget` (then `grace` after
    /// `extensionWillTerminate`) and `memoryLimitBytes`, the service's defaults unless given.
    public init(
        plugin: String, budget: Duration = WindowLimits.default.budget, grace: Duration = WindowLimits.default.grace,
        memoryLimitBytes: Int64 = WindowLimits.default.memoryBytes, appGroupIdentifier: String? = nil,
        allowInsecureLoopback: Bool = false
    ) {
        self.plugin = plugin
        limits = WindowLimits(budget: budget, grace: grace, memoryBytes: memoryLimitBytes)
        self.appGroupIdentifier = appGroupIdentifier
        self.allowInsecureLoopback = allowInsecureLoopback
    }

    /// The path of a dynamic library product SwiftPM built beside the running test bundle: `lib<name>.so`.
    public static func builtProduct(_ name: String) -> String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("lib\(name).so").path
    }

    /// Sends one content request with `manifest` as the manifest file's contents.
    public func contentRequest(
        _ request: ContentRequest, manifest: Data, info: AppExtensionInfo = .unrestricted
    ) throws -> HarnessRun {
        let directory = try Self.scratchDirectory()
        let manifestPath = directory.appendingPathComponent("manifest").path
        try manifest.write(to: URL(fileURLWithPath: manifestPath))
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: manifestPath)
        return try run([.contentRequest(request, manifestPath: manifestPath, info: info)], request: request)
    }

    /// Delivers a finished download whose file holds `contents`; `HarnessRun.leftFileBehind` says whether the
    /// extension failed to move it.
    public func downloadFinished(_ download: Download, contents: Data) throws -> HarnessRun {
        let file = try Self.scratchDirectory().appendingPathComponent(download.identifier)
        try contents.write(to: file)
        var result = try run([.downloadFinished(download, filePath: file.path)], request: nil)
        // The runner deletes a file left in place when the callback returns, and says so.
        result.leftFileBehind = result.outcome.filesLeftBehind.contains(0)
        try? FileManager.default.removeItem(at: file)
        return result
    }

    /// Delivers a failed download.
    public func downloadFailed(_ download: Download, error: HostError) throws -> HarnessRun {
        try run([.downloadFailed(download, error)], request: nil)
    }

    /// Asks a managed extension (`ManagedDownloaderExtension`) whether the host may download `pack`;
    /// `HarnessRun.assetPackAnswer` holds its answer (Apple's default, true, when it has no `shouldDownload(_:)`).
    public func shouldDownload(_ pack: AssetPackInfo) throws -> HarnessRun {
        try run([.shouldDownload(pack)], request: nil)
    }

    private func run(_ events: [WindowEvent], request: ContentRequest?) throws -> HarnessRun {
        let rules = DownloadRules(appGroupIdentifier: appGroupIdentifier, allowInsecureLoopback: allowInsecureLoopback)
        let scratch = try Self.scratchDirectory()
        let lockPath = scratch.appendingPathComponent("exclusive.lock").path
        let container = scratch.appendingPathComponent("container", isDirectory: true)
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        let appGroup = appGroupIdentifier.map { ExtensionWindow.AppGroup(identifier: $0, container: container.path) }
        let services = InMemoryHostServices(lockPath: lockPath) { DownloadValidation.check($0, for: nil, rules: rules) }
        let outcome = try ExtensionWindow(pluginPath: plugin, limits: limits, appGroup: appGroup)
            .run(events, services: services)
        let (accepted, rejected) =
            request.map { DownloadValidation.validate(outcome.returnedDownloads, for: $0, rules: rules) } ?? ([], [])
        return HarnessRun(
            outcome: outcome, downloads: accepted, rejected: rejected, scheduled: services.scheduled,
            container: appGroup == nil ? nil : container)
    }

    private static func scratchDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("bahost-harness-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }
}

/// What one harness run did.
public struct HarnessRun: Sendable {
    /// Everything the window recorded.
    public let outcome: WindowOutcome
    /// Returned downloads that passed validation.
    public let downloads: [Download]
    /// Returned downloads that did not, with Apple's error.
    public let rejected: [RejectedDownload]
    /// Downloads the extension scheduled through `BADownloadManager`.
    public let scheduled: [Download]
    /// The app group container the extension was given (a scratch folder), when the harness has an app group.
    public let container: URL?
    /// For `downloadFinished`: true when the file was still where the host put it after the callback.
    public internal(set) var leftFileBehind = false

    /// For `shouldDownload`: what the extension answered (true when it has no such entry point); nil when the window
    /// ended before it returned, which the host also takes as yes.
    public var assetPackAnswer: Bool? { outcome.assetPackAnswers.values.first }
    /// Why the window ended.
    public var stopReason: StopReason { outcome.stopReason }
    /// How long the window ran, from the process's start to its end.
    public var elapsed: Duration { outcome.elapsed }
    /// The extension's log and output lines, in order.
    public var log: [String] { outcome.log.map(\.message) }

    /// Throws unless the extension returned within `budget` with nothing rejected: one line to enforce a runtime
    /// budget in a test.
    public func requireReturned(within budget: Duration) throws {
        var problems: [String] = []
        if outcome.stopReason != .returned { problems.append(outcome.stopReason.summary) }
        if outcome.elapsed > budget { problems.append("ran \(outcome.elapsed), over the budget of \(budget)") }
        for r in rejected { problems.append("rejected \(r.download.identifier): \(r.error)") }
        if !problems.isEmpty { throw BudgetViolation(problems: problems, log: log) }
    }
}

/// An extension that did not return cleanly within its budget.
public struct BudgetViolation: Error, CustomStringConvertible {
    /// Each way the run missed its budget, one sentence each.
    public let problems: [String]
    /// The extension's log and output lines.
    public let log: [String]
    public var description: String {
        (problems + (log.isEmpty ? [] : ["log:"] + log.map { "  \($0)" })).joined(separator: "\n")
    }
}
