import AppConfig
import ExtensionRuntime
import Foundation
import Policy
import Vocabulary

/// `bahost run --window-only`: a content request's window and nothing else. No queue is opened and nothing is
/// downloaded; what the extension returned is checked by the rules the life cycle applies (the app group, the URL,
/// repeated identifiers), and what it scheduled through its manager is kept in memory for the report.
public struct WindowOnlyRequest {
    public var extensionPath: String
    public var request: ContentRequest
    /// The app's Info.plist, when given: its group and initial allowances.
    public var config: AppConfiguration?
    public var allowInsecureLoopback: Bool
    public var limits: WindowLimits
    /// The app group's container, when the Info.plist names the group.
    public var appGroup: ExtensionWindow.AppGroup?

    public init(
        extensionPath: String, request: ContentRequest, config: AppConfiguration?, allowInsecureLoopback: Bool,
        limits: WindowLimits, appGroup: ExtensionWindow.AppGroup?
    ) {
        self.extensionPath = extensionPath
        self.request = request
        self.config = config
        self.allowInsecureLoopback = allowInsecureLoopback
        self.limits = limits
        self.appGroup = appGroup
    }

    /// What the window did and what would have been queued.
    public struct Result: Sendable {
        public var outcome: WindowOutcome
        /// What the content request returned that the rules accept, each with its unique identifier.
        public var accepted: [Download]
        public var rejected: [RejectedDownload]
        /// What the extension scheduled through its `BADownloadManager` during the window.
        public var scheduled: [Download]
    }

    /// Runs the window on the calling thread, handing the extension `manifestPath` (which the window deletes).
    /// - Parameter onLog: sees each log line as it arrives.
    public func run(manifestPath: String, onLog: ((WindowLogLine) -> Void)? = nil) throws(WindowSetupError) -> Result {
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
        let outcome = try ExtensionWindow(pluginPath: extensionPath, limits: limits, appGroup: appGroup).run(
            [.contentRequest(request, manifestPath: manifestPath, info: info)], services: services, onLog: onLog)
        let (accepted, rejected) = DownloadValidation.validate(outcome.returnedDownloads, for: request, rules: rules)
        services.adopt(accepted)
        return Result(
            outcome: outcome, accepted: accepted.map { $0.withUniqueIdentifier() }, rejected: rejected,
            scheduled: services.scheduledThroughManager)
    }
}
