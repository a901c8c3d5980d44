import Foundation
import Vocabulary

/// The asset packs a download manifest lists (Apple's `AssetPackManifest`), for an app or extension that manages
/// its packs itself: make each pack's download with `allDownloads(for:)` or `AssetPack.download(for:)`.
///
/// The manifest is the one `bahost pack download-manifest create` writes.
public struct AssetPackManifest: Sendable, Hashable {
    /// The packs the manifest lists for this platform.
    public let assetPacks: Set<AssetPack>

    init(assetPacks: Set<AssetPack>) {
        self.assetPacks = assetPacks
    }

    /// Reads a download manifest file; `appGroupID` is the app group whose container receives the downloads.
    public init(contentsOf url: URL, appGroupID: String) throws {
        try self.init(from: Data(contentsOf: url), appGroupID: appGroupID)
    }

    /// Reads a download manifest; `appGroupID` is the app group whose container receives the downloads.
    public init(from data: Data, appGroupID: String) throws {
        let manifest = try JSONDecoder().decode(Listing.self, from: data)
        var packs = Set<AssetPack>()
        for entry in manifest.assetPacks where entry.platforms.isEmpty || entry.platforms.contains("linux") {
            var essentialFor = Set<BAContentRequest>()
            if let events = entry.downloadPolicy.essential?.installationEventTypes {
                if events.contains("firstInstallation") { essentialFor.insert(.install) }
                if events.contains("subsequentUpdate") { essentialFor.insert(.update) }
            }
            var pack = AssetPack(
                id: entry.id, version: entry.version, downloadSize: Int(entry.downloadSize),
                userInfo: try entry.userInfo.map { try JSONEncoder().encode($0) }, url: URL(string: entry.url),
                essentialFor: essentialFor)
            pack.applicationGroupIdentifier = appGroupID
            packs.insert(pack)
        }
        assetPacks = packs
    }

    /// The pack with this ID, if the manifest lists it.
    public func assetPack(withID id: String) -> AssetPack? { assetPacks.first { $0.id == id } }

    /// A download for each pack, essential where the pack's policy makes it so for `contentRequest` (pass nil in
    /// the app).
    public func allDownloads(for contentRequest: BAContentRequest?) -> Set<BADownload> {
        Set(assetPacks.map { $0.download(for: contentRequest) })
    }

    /// The fields of a download manifest that the app side reads.
    private struct Listing: Decodable {
        var assetPacks: [Entry]

        struct Entry: Decodable {
            var id: String
            var version: Int
            var url: String
            var downloadSize: Int64
            var platforms: [String]
            var userInfo: JSONValue?
            var downloadPolicy: Policy
        }

        struct Policy: Decodable {
            var essential: Events?
            struct Events: Decodable { var installationEventTypes: [String] }
        }
    }
}
