import ExtensionRuntime
import Foundation
import Queue
import Vocabulary

/// Hands finished and failed downloads back to the app's extension, woken in a fresh window for each batch.
///
/// Exactly once (`DeliveryClaim`): the batch is claimed for the window before it opens; the runner removes each
/// completion's ticket when its entry point returned (a finished file still there is deleted then, as Apple
/// does). A completion is delivered when its ticket is gone. One whose entry point never returned (the window
/// crashed or ran out of time first) is released and delivered again in a later window, at most
/// `maximumAttempts` times, then given up. The engine opens the window between `claimBatch` and `settle`.
public struct ExtensionDelivery: Sendable {
    public var store: QueueStore
    /// The folder where the completions' tickets lie (the finished files, and the failed ones' tickets).
    public var deliveries: URL
    /// Completions per window (`BatchPace` says how many an app's extension can take).
    public var batchSize: Int
    public var maximumAttempts: Int

    public init(store: QueueStore, deliveries: URL, batchSize: Int = BatchPace.first, maximumAttempts: Int = 3) {
        self.store = store
        self.deliveries = deliveries
        self.batchSize = batchSize
        self.maximumAttempts = maximumAttempts
    }

    /// Completions claimed for one window, in the order of its events.
    public struct Batch: Sendable {
        fileprivate var rows: [QueuedDownload]
        public var events: [WindowEvent]
    }

    /// What one delivery window did.
    public struct Report: Sendable {
        public var outcome: WindowOutcome
        public var delivered: [QueuedDownload]
        /// Completions whose entry point did not return and that will not be tried again.
        public var abandoned: [QueuedDownload]
    }

    /// Claims one batch of the app's pending completions that nobody holds, for a window; nil when none is pending.
    public func claimBatch(for appIdentifier: String) throws -> Batch? {
        var batch = try store.pendingCompletions(for: appIdentifier, limit: batchSize)
        guard !batch.isEmpty else { return nil }
        try CompletionTicket.issue(batch, deliveries: deliveries)
        // Claimed and counted before the window opens, so that a host killed during it still counts the attempt, and
        // nobody else gets the batch meanwhile.
        for index in batch.indices {
            batch[index].deliveryAttempts += 1
            batch[index].claim = DeliveryClaim.window.text
        }
        try store.saveDelivery(batch)
        return Batch(rows: batch, events: batch.map { .completion($0.completion(deliveries: deliveries)) })
    }

    /// Records what the batch's window delivered, once it ended: released are those to be delivered again.
    public func settle(_ batch: Batch, outcome: WindowOutcome) throws -> Report {
        var delivered: [QueuedDownload] = []
        var abandoned: [QueuedDownload] = []
        var released: [QueuedDownload] = []
        for (index, var completion) in batch.rows.enumerated() {
            let ticket = CompletionTicket.path(of: completion, deliveries: deliveries)
            // An entry point that returned had its ticket removed; one that crashed after taking the file took it.
            if index < outcome.completedEvents || !CompletionTicket.exists(ticket) {
                unlink(ticket)
                completion.markDelivered()
                delivered.append(completion)
            } else if completion.deliveryAttempts >= maximumAttempts {
                unlink(ticket)
                completion.markDelivered()
                abandoned.append(completion)
            } else {
                completion.claim = nil
                released.append(completion)
            }
        }
        try store.saveDelivery(delivered + abandoned + released)
        return Report(outcome: outcome, delivered: delivered, abandoned: abandoned)
    }
}
