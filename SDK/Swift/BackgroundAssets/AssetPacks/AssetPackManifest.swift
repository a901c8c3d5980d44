import Foundation
import Vocabulary

/// The asset packs a download manifest lists (Apple's `AssetPackManifest`), for an app or extension that manages
/// its packs itself: make each pack's download with `allDownloads(for:)` or `AssetPack.download(for:)`.
///
/// The manifest is the one `bahost pack download-manifest create` writes.
public struct AssetPackManifest: Sendable, Hashable {
    /// The packs the manifest lists for this platform.
    public let assetPacks: Set<AssetPack>
    /// (27) The language localized packs fall back to when none of the user's preferred languages is offered.
    public let primaryLanguage: Locale.Language?
    /// (27) The language the app's localized packs follow: the one the app set (`AssetPackManager.resolvedLanguage`),
    /// else the best of the user's preferred languages among those offered, else the primary language.
    public let resolvedLanguage: Locale.Language?

    init(assetPacks: Set<AssetPack>, primaryLanguage: String?, resolvedLanguage: String?) {
        self.assetPacks = assetPacks
        self.primaryLanguage = primaryLanguage.map { Locale.Language(identifier: $0) }
        self.resolvedLanguage = resolvedLanguage.map { Locale.Language(identifier: $0) }
    }

    /// (27) The languages the localized packs offer, each once, in the order of their BCP-47 tags (`de`, `en`,
    /// `fr-CA`): the same order every time.
    public var availableLanguages: [Locale.Language] {
        Locale.Language.inTagOrder(Set(localizedAssetPacks.compactMap(\.languageTag)))
    }

    /// (27) The packs localized for a language.
    public var localizedAssetPacks: Set<AssetPack> { assetPacks.filter { $0.language != nil } }

    /// (27) The packs localized for `language`: its own tag, or failing that its language (`fr` for `fr-CA`).
    public func localizedAssetPacks(for language: Locale.Language) -> Set<AssetPack> {
        let wanted = language.maximalIdentifier
        let exact = localizedAssetPacks.filter { $0.language?.maximalIdentifier == wanted }
        guard exact.isEmpty else { return exact }
        return localizedAssetPacks.filter { $0.language?.languageCode == language.languageCode }
    }

    /// Reads a download manifest file; `appGroupID` is the app group whose container receives the downloads.
    public init(contentsOf url: URL, appGroupID: String) throws {
        try self.init(from: Data(contentsOf: url), appGroupID: appGroupID)
    }

    /// Reads a download manifest; `appGroupID` is the app group whose container receives the downloads.
    public init(from data: Data, appGroupID: String) throws {
        let manifest = try JSONDecoder().decode(Listing.self, from: data)
        var packs = Set<AssetPack>()
        var languages = Set<String>()
        for entry in manifest.assetPacks where entry.platforms.isEmpty || entry.platforms.contains("linux") {
            var essentialFor = Set<BAContentRequest>()
            if let events = entry.downloadPolicy.essential?.installationEventTypes {
                if events.contains("firstInstallation") { essentialFor.insert(.install) }
                if events.contains("subsequentUpdate") { essentialFor.insert(.update) }
            }
            var pack = AssetPack(
                id: entry.id, version: entry.version, downloadSize: Int(entry.downloadSize),
                userInfo: try entry.userInfo.map { try JSONEncoder().encode($0) }, language: entry.language,
                url: URL(string: entry.url), essentialFor: essentialFor)
            pack.applicationGroupIdentifier = appGroupID
            packs.insert(pack)
            if let language = entry.language { languages.insert(language) }
        }
        // Read by the app or extension itself: the resolved language is the user's best, in this process.
        let resolved = LanguageTags.best(for: LanguageTags.preferred(), among: languages) ?? manifest.primaryLanguage
        self.init(assetPacks: packs, primaryLanguage: manifest.primaryLanguage, resolvedLanguage: resolved)
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
        var primaryLanguage: String?

        struct Entry: Decodable {
            var id: String
            var version: Int
            var url: String
            var downloadSize: Int64
            var platforms: [String]
            var userInfo: JSONValue?
            var downloadPolicy: Policy
            var language: String?
        }

        struct Policy: Decodable {
            var essential: Events?
            struct Events: Decodable { var installationEventTypes: [String] }
        }
    }
}

extension Locale.Language {
    /// The languages of `tags` (BCP-47), each once whatever its case, in the order of their tags: Apple's API returns
    /// these as arrays, and an app that compares two readings must find the same order.
    static func inTagOrder(_ tags: Set<String>) -> [Locale.Language] {
        var seen = Set<String>()
        return tags.sorted { $0.lowercased() < $1.lowercased() }
            .filter { seen.insert($0.lowercased()).inserted }
            .map { Locale.Language(identifier: $0) }
    }
}
