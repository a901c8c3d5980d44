import ExtrasBase64

/// A managed asset pack as the layers pass it around: Apple's `AssetPack` fields, to the extension
/// (`shouldDownload(_:)`) and to the app (`AssetPackManager`).
public struct AssetPackInfo: Codable, Sendable, Hashable {
    public var id: String
    public var version: Int
    /// The archive's size on the wire.
    public var downloadSize: Int64
    /// The pack manifest's `userInfo`, as the bytes of its JSON.
    public var userInfo: [UInt8]?
    /// (27) A localized pack's language, a BCP-47 tag; nil for every language.
    public var language: String?

    public init(id: String, version: Int, downloadSize: Int64, userInfo: [UInt8]?, language: String? = nil) {
        self.id = id
        self.version = version
        self.downloadSize = downloadSize
        self.userInfo = userInfo
        self.language = language
    }

    private enum CodingKeys: String, CodingKey { case id, version, downloadSize, userInfo, language }

    // `userInfo` is a base64 string, as Foundation's coders write bytes (`Data`): the protocol's frames stay what they
    // were when this field was a `Data`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        version = try container.decode(Int.self, forKey: .version)
        downloadSize = try container.decode(Int64.self, forKey: .downloadSize)
        language = try container.decodeIfPresent(String.self, forKey: .language)
        guard let text = try container.decodeIfPresent(String.self, forKey: .userInfo) else { return }
        do {
            userInfo = try text.base64decoded()
        } catch {
            throw DecodingError.dataCorruptedError(
                forKey: .userInfo, in: container, debugDescription: "userInfo is not base64: \(error)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(version, forKey: .version)
        try container.encode(downloadSize, forKey: .downloadSize)
        try container.encodeIfPresent(userInfo.map { Base64.encodeToString(bytes: $0) }, forKey: .userInfo)
        try container.encodeIfPresent(language, forKey: .language)
    }
}
