/// Where a download stands in the host's queue. Terminal states keep the row until its completion is delivered.
public enum TransferState: String, Codable, Sendable, CaseIterable {
    /// Waiting for its turn (priority, essential-first, concurrency limits).
    case queued
    /// Bytes are moving.
    case downloading
    /// A transient failure (reset, timeout, 408/429/5xx); starts again at `retryAt`.
    case waitingToRetry
    /// The server could not be reached at all; tries again at `retryAt`.
    case waitingForNetwork
    /// Verified and in the app's container; its completion is pending until delivered.
    case finished
    /// Failed for good; its completion is pending until delivered.
    case failed

    public var isActive: Bool { self != .finished && self != .failed }

    /// The active states as an SQL list, `('queued', 'downloading', …)`: the one definition every query uses.
    public static let activeList = "(" + allCases.filter(\.isActive).map { "'\($0.rawValue)'" }.joined(separator: ", ") + ")"

    /// Apple's `BADownload.State` raw value.
    public var publicState: Int32 {
        switch self {
        case .queued, .waitingToRetry, .waitingForNetwork: 1
        case .downloading: 2
        case .finished: 3
        case .failed: -1
        }
    }

    /// `publicState` as an SQL expression of a `state` column, for a query that reads it without making a value.
    public static let publicStateSQL = "CASE state "
        + allCases.map { "WHEN '\($0.rawValue)' THEN \($0.publicState) " }.joined() + "ELSE 1 END"
}
