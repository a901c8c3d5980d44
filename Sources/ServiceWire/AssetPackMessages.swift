import Vocabulary

/// Where a pack's download stands: Apple's `AssetPackManager.DownloadStatusUpdate`, without the pack.
public enum WirePackUpdate: Codable, Sendable, Hashable {
    case began
    case paused
    case downloading(completed: Int64, total: Int64)
    /// Installed: its files are available.
    case finished
    case failed(HostError)
}
