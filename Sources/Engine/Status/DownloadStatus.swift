import Foundation
import HostVocabulary
import Queue
import Vocabulary

/// One download as the engine reports it, in its events and its answers: the download and where it stands, never
/// the queue's row, whose columns may change without the service or the command line knowing.
public struct DownloadStatus: Sendable, Hashable {
    public var appIdentifier: String
    public var uniqueIdentifier: String
    /// The download, its `state` Apple's public one.
    public var download: Download
    public var state: TransferState
    /// Bytes on disk when last recorded.
    public var bytesReceived: Int64
    public var error: HostError?
    /// The finished file in the app's container, until its completion is delivered.
    public var filePath: String?
    /// Started or promoted by the app with `startForegroundDownload`.
    public var foreground: Bool
    /// Its completion was delivered (or given up).
    public var delivered: Bool
    /// While it waits (to retry, or for the network): when it is tried next.
    public var retryAt: Date?
    /// Since when it has found no path to its server (waiting for the network), without reaching it in between.
    public var offlineSince: Date?

    public var identifier: String { download.identifier }
    /// How its transfers use the network, as `NetworkConditions` judge it.
    public var networkUse: NetworkUse {
        NetworkUse(
            discretionary: !download.isEssential && !foreground, access: download.networkAccess,
            host: QueuedDownload.host(of: download))
    }
    public var isEssential: Bool { download.isEssential }
    public var priority: Int64 { download.priority }

    /// The version a pack download was queued for: its unique identifier ends with ".vN".
    public var assetPackVersion: Int { Self.assetPackVersion(uniqueIdentifier) }

    static func assetPackVersion(_ uniqueIdentifier: String) -> Int {
        uniqueIdentifier.split(separator: ".").last.flatMap { Int($0.dropFirst()) } ?? 0
    }
}

extension QueuedDownload {
    /// The row as the engine reports it.
    var status: DownloadStatus {
        DownloadStatus(
            appIdentifier: appIdentifier, uniqueIdentifier: uniqueIdentifier, download: described, state: state,
            bytesReceived: bytesReceived, error: error, filePath: filePath, foreground: foreground, delivered: delivered,
            retryAt: retryAt, offlineSince: offlineSince)
    }
}
