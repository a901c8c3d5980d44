import ExtensionRuntime
import Foundation
import Queue
import Vocabulary

/// Hands finished and failed downloads back to the app's extension, woken in a fresh window for each batch.
///
/// Exactly once: a completion counts as delivered when its entry point returned. One whose entry point never
/// returned (the window crashed or ran out of time first) is delivered again in a later window, at most
/// `maximumAttempts` times, then given up. A finished file still where the host put it after the callback
/// returned is deleted (Apple: it "must be moved before this method exits scope").
public struct CompletionDelivery: Sendable {
    public var store: QueueStore
    public var limits: WindowLimits
    public var appGroup: ExtensionWindow.AppGroup?
    /// Completions per window.
    public var batchSize: Int
    public var maximumAttempts: Int

    /// Completions per window unless told otherwise: enough to amortize a window's spawn over many files, few enough
    /// that a window's budget covers their callbacks.
    public static let defaultBatchSize = 32

    public init(
        store: QueueStore, limits: WindowLimits, appGroup: ExtensionWindow.AppGroup?,
        batchSize: Int = defaultBatchSize,
        maximumAttempts: Int = 3
    ) {
        self.store = store
        self.limits = limits
        self.appGroup = appGroup
        self.batchSize = batchSize
        self.maximumAttempts = maximumAttempts
    }

    /// What one delivery window did.
    public struct Report: Sendable {
        public var outcome: WindowOutcome
        public var delivered: [QueuedDownload]
        /// Completions whose entry point did not return and that will not be tried again.
        public var abandoned: [QueuedDownload]
    }

    /// Delivers one batch of the app's pending completions; nil when none is pending.
    public func deliverBatch(for app: AppRecord, services: ExtensionHostServices) throws -> Report? {
        var batch = try store.pendingCompletions(for: app.appIdentifier, limit: batchSize)
        guard !batch.isEmpty else { return nil }
        // Counted before the window opens, so that a host killed during it still counts the attempt.
        for index in batch.indices { batch[index].deliveryAttempts += 1 }
        try store.save(batch)
        let events: [WindowEvent] = batch.map { completion in
            if completion.state == .finished, let path = completion.filePath {
                return .downloadFinished(completion.described, filePath: path)
            }
            return .downloadFailed(
                completion.described,
                completion.error ?? HostError(code: -1, domain: "BAHostErrorDomain", message: "the download failed"))
        }
        let outcome = try ExtensionWindow(pluginPath: app.pluginPath, limits: limits, appGroup: appGroup)
            .run(events, services: services)

        var delivered: [QueuedDownload] = []
        var abandoned: [QueuedDownload] = []
        for (index, var completion) in batch.enumerated() {
            let returned = index < outcome.completedEvents
            guard returned || completion.deliveryAttempts >= maximumAttempts else { continue }
            if let path = completion.filePath { unlink(path) }
            completion.filePath = nil
            completion.delivered = true
            if returned { delivered.append(completion) } else { abandoned.append(completion) }
        }
        try store.save(delivered + abandoned)
        return Report(outcome: outcome, delivered: delivered, abandoned: abandoned)
    }
}
