import Foundation
import Vocabulary

/// A managed app's asset pack as the service describes it to the app: the fields of Apple's `AssetPack`.
public struct WirePack: Codable, Sendable, Hashable {
    public var id: String
    public var version: Int
    /// The archive's size on the wire.
    public var downloadSize: Int64
    /// The pack manifest's `userInfo`, as JSON.
    public var userInfo: Data?

    public init(id: String, version: Int, downloadSize: Int64, userInfo: Data?) {
        self.id = id
        self.version = version
        self.downloadSize = downloadSize
        self.userInfo = userInfo
    }
}

/// Where a pack's download stands: Apple's `AssetPackManager.DownloadStatusUpdate`, without the pack.
public enum WirePackUpdate: Codable, Sendable, Hashable {
    case began
    case paused
    case downloading(completed: Int64, total: Int64)
    /// Installed: its files are available.
    case finished
    case failed(HostError)
}
