import Foundation
import Vocabulary

/// A pack's description, as its author writes it for `bahost pack package`: Apple's `ba-package` manifest.
///
///     {
///       "assetPackID": "level-1",
///       "downloadPolicy": { "essential": { "installationEventTypes": ["firstInstallation", "subsequentUpdate"] } },
///       "fileSelectors": [ { "file": "levels/1.json" }, { "directory": "textures/1" } ],
///       "platforms": [],
///       "userInfo": { "anything": "JSON" }
///     }
///
/// Selector paths are relative to the folder that holds the manifest. `platforms` empty means every platform; bahost
/// offers a pack whose list is empty or names `linux` (a bahost addition to Apple's `iOS`, `macOS`, `tvOS`,
/// `visionOS`).
public struct PackManifest: Sendable, Hashable, Codable {
    public var assetPackID: String
    public var downloadPolicy: DownloadPolicy
    public var fileSelectors: [FileSelector]
    public var platforms: [String]
    /// Any JSON value, handed to the app as `AssetPack.userInfo`.
    public var userInfo: JSONValue?

    public init(
        assetPackID: String, downloadPolicy: DownloadPolicy, fileSelectors: [FileSelector], platforms: [String] = [],
        userInfo: JSONValue? = nil
    ) {
        self.assetPackID = assetPackID
        self.downloadPolicy = downloadPolicy
        self.fileSelectors = fileSelectors
        self.platforms = platforms
        self.userInfo = userInfo
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        assetPackID = try container.decode(String.self, forKey: .assetPackID)
        downloadPolicy = try container.decode(DownloadPolicy.self, forKey: .downloadPolicy)
        fileSelectors = try container.decode([FileSelector].self, forKey: .fileSelectors)
        platforms = try container.decodeIfPresent([String].self, forKey: .platforms) ?? []
        userInfo = try container.decodeIfPresent(JSONValue.self, forKey: .userInfo)
    }

    /// Apple's platform names, and bahost's.
    public static let knownPlatforms: Set<String> = ["iOS", "macOS", "tvOS", "visionOS", "linux"]

    /// Whether bahost offers the pack.
    public var isForLinux: Bool { platforms.isEmpty || platforms.contains("linux") }

    /// Refuses what App Store Connect refuses, and what bahost could not serve or store safely.
    public func validate() throws(PackError) {
        try Self.validate(id: assetPackID)
        try downloadPolicy.validate()
        guard !fileSelectors.isEmpty else { throw .invalidManifest("the pack '\(assetPackID)' selects no files") }
        for selector in fileSelectors { _ = try PackPath(selector.path) }
        for platform in platforms where !Self.knownPlatforms.contains(platform) {
            throw .invalidManifest(
                "unknown platform '\(platform)': use \(Self.knownPlatforms.sorted().joined(separator: ", ")), or none for all")
        }
    }

    /// A pack ID names a URL path segment and a folder: 1 to 128 of `A-Z a-z 0-9 . -`, not starting with a dot.
    /// Apple refuses underscores (App Store Connect's -19241), and so does bahost.
    public static func validate(id: String) throws(PackError) {
        guard !id.isEmpty, id.utf8.count <= 128 else {
            throw .invalidManifest("an asset pack ID must be 1 to 128 characters long")
        }
        if id.contains("_") {
            throw .invalidManifest("the asset pack ID '\(id)' contains an underscore, which Apple refuses: use '-'")
        }
        guard !id.hasPrefix("."), id.utf8.allSatisfy({ byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "-")
        }) else {
            throw .invalidManifest("the asset pack ID \(PackError.quoted(id)) may hold only A-Z a-z 0-9 . - and not start with '.'")
        }
    }
}

/// When a pack downloads: Apple's three policies.
public enum DownloadPolicy: Sendable, Hashable, Codable {
    /// Downloaded during the installation events named, before the app may launch.
    case essential(installationEventTypes: Set<InstallationEvent>)
    /// Started during the installation events named; may go on after launch.
    case prefetch(installationEventTypes: Set<InstallationEvent>)
    /// Only when the app asks (`ensureLocalAvailability`).
    case onDemand

    public enum InstallationEvent: String, Sendable, Hashable, Codable, CaseIterable {
        case firstInstallation, subsequentUpdate
    }

    private enum Keys: String, CodingKey { case essential, prefetch, onDemand }
    private enum EventKeys: String, CodingKey { case installationEventTypes }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath,
                debugDescription: "downloadPolicy must hold exactly one of essential, prefetch, onDemand"))
        }
        switch key {
        case .onDemand:
            self = .onDemand
        case .essential, .prefetch:
            let events = try container.nestedContainer(keyedBy: EventKeys.self, forKey: key)
                .decode([InstallationEvent].self, forKey: .installationEventTypes)
            self = key == .essential ? .essential(installationEventTypes: Set(events)) : .prefetch(installationEventTypes: Set(events))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .onDemand:
            _ = container.nestedContainer(keyedBy: EventKeys.self, forKey: .onDemand)
        case .essential(let events), .prefetch(let events):
            var nested = container.nestedContainer(
                keyedBy: EventKeys.self, forKey: { if case .essential = self { return .essential } else { return .prefetch } }())
            try nested.encode(events.map(\.rawValue).sorted(), forKey: .installationEventTypes)
        }
    }

    func validate() throws(PackError) {
        switch self {
        case .essential(let events) where events.isEmpty, .prefetch(let events) where events.isEmpty:
            throw .invalidManifest("an essential or prefetch policy needs at least one of installationEventTypes firstInstallation, subsequentUpdate")
        default:
            break
        }
    }

    /// Whether the pack downloads on its own for this installation event.
    public func downloads(on event: InstallationEvent) -> Bool {
        switch self {
        case .essential(let events), .prefetch(let events): events.contains(event)
        case .onDemand: false
        }
    }

    public var isEssential: Bool { if case .essential = self { true } else { false } }
}

/// Which files go into a pack: one file, or a folder with everything under it.
public enum FileSelector: Sendable, Hashable, Codable {
    case file(String)
    case directory(String)

    private enum Keys: String, CodingKey { case file, directory }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        if let file = try container.decodeIfPresent(String.self, forKey: .file) {
            self = .file(file)
        } else if let directory = try container.decodeIfPresent(String.self, forKey: .directory) {
            self = .directory(directory)
        } else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath, debugDescription: "a file selector holds \"file\" or \"directory\""))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .file(let path): try container.encode(path, forKey: .file)
        case .directory(let path): try container.encode(path, forKey: .directory)
        }
    }

    public var path: String {
        switch self {
        case .file(let path), .directory(let path): path
        }
    }
}
