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
/// Selector paths are relative to `sourceRoot` (27), itself relative to the folder that holds the manifest (that
/// folder when absent). `platforms` empty means every platform; bahost offers a pack whose list is empty or names
/// `linux` (a bahost addition to Apple's `iOS`, `macOS`, `tvOS`, `visionOS`). `language` (27, BCP-47) makes the
/// pack a localized one: downloaded on its own only for the app's resolved language.
public struct PackManifest: Sendable, Hashable, Codable {
    public var assetPackID: String
    public var downloadPolicy: DownloadPolicy
    public var fileSelectors: [FileSelector]
    public var platforms: [String]
    /// Any JSON value, handed to the app as `AssetPack.userInfo`.
    public var userInfo: JSONValue?
    /// The folder the selectors' paths start from, relative to the manifest's folder.
    public var sourceRoot: String?
    /// The language of a localized pack, a BCP-47 tag such as `fr` or `pt-BR`; nil for every language.
    public var language: String?

    public init(
        assetPackID: String, downloadPolicy: DownloadPolicy, fileSelectors: [FileSelector], platforms: [String] = [],
        userInfo: JSONValue? = nil, sourceRoot: String? = nil, language: String? = nil
    ) {
        self.assetPackID = assetPackID
        self.downloadPolicy = downloadPolicy
        self.fileSelectors = fileSelectors
        self.platforms = platforms
        self.userInfo = userInfo
        self.sourceRoot = sourceRoot
        self.language = language
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        assetPackID = try container.decode(String.self, forKey: .assetPackID)
        downloadPolicy = try container.decode(DownloadPolicy.self, forKey: .downloadPolicy)
        fileSelectors = try container.decode([FileSelector].self, forKey: .fileSelectors)
        platforms = try container.decodeIfPresent([String].self, forKey: .platforms) ?? []
        userInfo = try container.decodeIfPresent(JSONValue.self, forKey: .userInfo)
        sourceRoot = try container.decodeIfPresent(String.self, forKey: .sourceRoot)
        language = try container.decodeIfPresent(String.self, forKey: .language)
    }

    /// Apple's platform names, and bahost's.
    public static let knownPlatforms: Set<String> = ["iOS", "macOS", "tvOS", "visionOS", "linux"]

    /// Whether bahost offers the pack.
    public var isForLinux: Bool { platforms.isEmpty || platforms.contains("linux") }

    /// Refuses what App Store Connect refuses, and what bahost could not serve or store safely.
    public func validate() throws(PackError) {
        try Self.validate(id: assetPackID)
        try downloadPolicy.validate()
        guard fileSelectors.contains(where: { !$0.isExclusion }) else {
            throw .invalidManifest("the pack '\(assetPackID)' selects no files")
        }
        for selector in fileSelectors { try selector.validate() }
        if let sourceRoot { _ = try PackPath(sourceRoot) }
        if let language { try Self.validate(language: language) }
        for platform in platforms where !Self.knownPlatforms.contains(platform) {
            throw .invalidManifest(
                "unknown platform '\(platform)': use \(Self.knownPlatforms.sorted().joined(separator: ", ")), or none for all")
        }
    }

    /// A language tag of BCP-47's shape: a 2 to 8 letter language, then subtags of 1 to 8 letters or digits, joined
    /// by `-` (`fr`, `pt-BR`, `zh-Hant-TW`), at most 35 characters.
    public static func validate(language: String) throws(PackError) {
        let subtags = language.split(separator: "-", omittingEmptySubsequences: false)
        guard language.utf8.count <= 35, let first = subtags.first, (2...8).contains(first.count),
            first.allSatisfy({ $0.isASCII && $0.isLetter }),
            subtags.dropFirst().allSatisfy({ (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } })
        else {
            throw .invalidManifest("\(PackError.quoted(language)) is not a BCP-47 language tag such as 'fr' or 'pt-BR'")
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

/// Which files go into a pack. Apple's first two, and its 27 additions: a glob, a file or a folder packed at another
/// path, and an exclusion, which drops what matches it from what the others selected.
public enum FileSelector: Sendable, Hashable, Codable {
    /// One file, at the same path in the pack.
    case file(String)
    /// A folder and everything under it, at the same path.
    case directory(String)
    /// (27) Every file whose path matches a glob (`*` and `?` stay within a path component, `**` crosses them).
    case filePattern(String)
    /// (27) One file, packed at `destination`.
    case fileSource(String, destination: String)
    /// (27) A folder and everything under it, packed under `destination`.
    case directorySource(String, destination: String)
    /// (27) Leaves out every selected file whose pack path matches this glob.
    case fileExclusion(String)

    private enum Keys: String, CodingKey {
        case file, directory, filePattern, fileSource, fileDestination, directorySource, directoryDestination
        case fileExclusion
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        func value(_ key: Keys) throws -> String? { try container.decodeIfPresent(String.self, forKey: key) }
        if let file = try value(.file) {
            self = .file(file)
        } else if let directory = try value(.directory) {
            self = .directory(directory)
        } else if let pattern = try value(.filePattern) {
            self = .filePattern(pattern)
        } else if let source = try value(.fileSource) {
            guard let destination = try value(.fileDestination) else {
                throw DecodingError.dataCorrupted(.init(
                    codingPath: decoder.codingPath, debugDescription: "\"fileSource\" needs a \"fileDestination\""))
            }
            self = .fileSource(source, destination: destination)
        } else if let source = try value(.directorySource) {
            guard let destination = try value(.directoryDestination) else {
                throw DecodingError.dataCorrupted(.init(
                    codingPath: decoder.codingPath, debugDescription: "\"directorySource\" needs a \"directoryDestination\""))
            }
            self = .directorySource(source, destination: destination)
        } else if let pattern = try value(.fileExclusion) {
            self = .fileExclusion(pattern)
        } else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath,
                debugDescription: "a file selector holds one of \"file\", \"directory\", \"filePattern\", \"fileSource\" with \"fileDestination\", \"directorySource\" with \"directoryDestination\", \"fileExclusion\""))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .file(let path): try container.encode(path, forKey: .file)
        case .directory(let path): try container.encode(path, forKey: .directory)
        case .filePattern(let pattern): try container.encode(pattern, forKey: .filePattern)
        case .fileSource(let source, let destination):
            try container.encode(source, forKey: .fileSource)
            try container.encode(destination, forKey: .fileDestination)
        case .directorySource(let source, let destination):
            try container.encode(source, forKey: .directorySource)
            try container.encode(destination, forKey: .directoryDestination)
        case .fileExclusion(let pattern): try container.encode(pattern, forKey: .fileExclusion)
        }
    }

    var isExclusion: Bool { if case .fileExclusion = self { true } else { false } }

    /// Paths are pack paths (relative, no `..`); a glob's literal parts are too.
    func validate() throws(PackError) {
        switch self {
        case .file(let path), .directory(let path): _ = try PackPath(path)
        case .fileSource(let source, let destination), .directorySource(let source, let destination):
            _ = try PackPath(source)
            _ = try PackPath(destination)
        case .filePattern(let pattern), .fileExclusion(let pattern):
            guard !pattern.isEmpty, !pattern.hasPrefix("/"), !pattern.split(separator: "/").contains("..") else {
                throw .invalidManifest("the pattern \(PackError.quoted(pattern)) must be relative and stay inside the pack")
            }
        }
    }
}
