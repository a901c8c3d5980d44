import Foundation

/// A managed asset pack as the layers pass it around: Apple's `AssetPack` fields, to the extension
/// (`shouldDownload(_:)`) and to the app (`AssetPackManager`).
public struct AssetPackInfo: Codable, Sendable, Hashable {
    public var id: String
    public var version: Int
    /// The archive's size on the wire.
    public var downloadSize: Int64
    /// The pack manifest's `userInfo`, as JSON.
    public var userInfo: Data?
    /// (27) A localized pack's language, a BCP-47 tag; nil for every language.
    public var language: String?

    public init(id: String, version: Int, downloadSize: Int64, userInfo: Data?, language: String? = nil) {
        self.id = id
        self.version = version
        self.downloadSize = downloadSize
        self.userInfo = userInfo
        self.language = language
    }
}
