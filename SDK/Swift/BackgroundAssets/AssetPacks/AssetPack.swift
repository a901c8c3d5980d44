import Foundation

/// An archive of assets that the system downloads and keeps up to date for the app (Apple's `AssetPack`).
///
/// An instance can be invalidated when the asset pack is updated on the server: ask `AssetPackManager` again.
public struct AssetPack: Sendable, Hashable, Identifiable {
    /// The asset pack's unique identifier.
    public let id: String
    /// The asset pack's version on the server; it goes up each time the pack changes.
    public let version: Int
    /// The size of the download file in bytes, which can differ from the installed size.
    public let downloadSize: Int
    /// The JSON the pack's manifest gives as `userInfo`, if any.
    public let userInfo: Data?
    /// The language of a localized pack (27); nil for a pack for every language.
    public let language: Locale.Language?

    /// Where the pack is served, and whether it is essential for a content request (unmanaged use of a manifest).
    let url: URL?
    let essentialFor: Set<BAContentRequest>
    /// `language`'s BCP-47 tag as the manifest wrote it.
    let languageTag: String?

    init(
        id: String, version: Int, downloadSize: Int, userInfo: Data?, language: String? = nil, url: URL? = nil,
        essentialFor: Set<BAContentRequest> = []
    ) {
        self.id = id
        self.version = version
        self.downloadSize = downloadSize
        self.userInfo = userInfo
        self.language = language.map { Locale.Language(identifier: $0) }
        languageTag = language
        self.url = url
        self.essentialFor = essentialFor
    }

    /// A download of the pack's archive, for an app that manages its packs itself (Apple's `BAAssetPack.download`).
    public func download() -> BADownload { download(for: nil) }

    /// A download of the pack's archive for a content request, essential when the pack's policy makes it so for
    /// that request (Apple's `-downloadForContentRequest:`).
    public func download(for contentRequest: BAContentRequest?) -> BADownload {
        let essential = contentRequest.map { essentialFor.contains($0) } ?? false
        return BAURLDownload(
            identifier: id, request: URLRequest(url: url ?? URL(fileURLWithPath: "/")), essential: essential,
            fileSize: downloadSize, applicationGroupIdentifier: applicationGroupIdentifier, priority: .default)
    }

    /// Set by `AssetPackManifest`; the app group whose container receives the download.
    var applicationGroupIdentifier = ""

    /// The status of an asset pack on the device relative to the server (Apple's `AssetPack.Status`, with its raw
    /// values). It describes itself by its options' names.
    public struct Status: OptionSet, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// The server offers the pack.
        public static let downloadAvailable = Status(rawValue: 1)
        /// The server offers a newer version than the one on the device.
        public static let updateAvailable = Status(rawValue: 2)
        /// The version on the device is the latest.
        public static let upToDate = Status(rawValue: 4)
        /// The version on the device is older than the server's.
        public static let outOfDate = Status(rawValue: 8)
        /// The server no longer offers the pack on the device.
        public static let obsolete = Status(rawValue: 16)
        /// The pack is downloading.
        public static let downloading = Status(rawValue: 32)
        /// A version of the pack is on the device.
        public static let downloaded = Status(rawValue: 64)

        public var description: String {
            let names: [(Status, String)] = [
                (.downloadAvailable, "downloadAvailable"), (.updateAvailable, "updateAvailable"), (.upToDate, "upToDate"),
                (.outOfDate, "outOfDate"), (.obsolete, "obsolete"), (.downloading, "downloading"),
                (.downloaded, "downloaded"),
            ]
            let set = names.filter { contains($0.0) }.map(\.1)
            return "[\(set.joined(separator: ", "))]"
        }
    }
}
