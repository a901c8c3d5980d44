import Foundation
import HostVocabulary
import Queue
import Vocabulary

/// Hands finished and failed downloads to the running app's delegate, one at a time, each claimed for the app's
/// process before it is offered (`DeliveryClaim`): the delegate's SDK removes the ticket once the method returned,
/// before it answers. What the delegate declines (it lacks the method) goes to the extension; one it is late with
/// stays with it until its method returns or its process ends, never both it and the extension.
public struct DelegateDelivery: Sendable {
    public var store: QueueStore
    /// The folder where the completions' tickets lie.
    public var deliveries: URL

    public init(store: QueueStore, deliveries: URL) {
        self.store = store
        self.deliveries = deliveries
    }

    /// How the offers ended.
    public enum Outcome: Sendable, Hashable {
        /// Every pending completion was delivered, or the offers stopped (the app's connection ended): nothing is
        /// left for the extension now.
        case done
        /// The delegate declined some: the extension gets them.
        case declinedSome
        /// The delegate is late with one: it holds it, and the next offers would only queue behind it.
        case waiting
    }

    /// Offers the app's pending completions to its delegate in `process`, through `send`; `delivered` hears each
    /// as it is recorded delivered.
    public func offer(
        _ appIdentifier: String, to process: ProcessStamp, send: (Completion) async -> OfferResult,
        delivered: (QueuedDownload) -> Void
    ) async throws -> Outcome {
        let pending = try store.pendingCompletions(for: appIdentifier)
        try CompletionTicket.issue(pending, deliveries: deliveries)
        var declined = false
        for var row in pending {
            let completion = row.completion(deliveries: deliveries)
            row.claim = DeliveryClaim.app(process).text
            try store.saveDelivery([row])
            let result = await send(completion)
            if result == .handled || !CompletionTicket.exists(completion.ticket) {
                // Delivered; a file the delegate left where it was is deleted, as Apple does.
                unlink(completion.ticket)
                row.markDelivered()
                try store.saveDelivery([row])
                delivered(row)
            } else if result == .noAnswer && process.isAlive {
                return .waiting
            } else {
                row.claim = nil
                try store.saveDelivery([row])
                if result == .declined { declined = true } else { return .done }
            }
        }
        return declined ? .declinedSome : .done
    }
}
