import CBAExtension
import Glibc

/// A download in the host's terms: the fields of the C ABI's `ba_download_t`, whoever described it (an extension
/// through the runner, an app through the service's socket, the queue from its row). The host never sees a
/// `BADownload` object: only these fields, decoded and checked.
public struct Download: Sendable, Hashable, Codable {
    /// What the download fetches: an asset URL, or the app's manifest (which reaches an extension only as a failure),
    /// as the ABI numbers them; or a managed asset pack's archive, which the host installs itself and which never
    /// crosses the ABI.
    public enum Kind: Int32, Sendable, Codable {
        case url = 0
        case manifest = 1
        case assetPack = 2
    }

    public var kind: Kind
    public var identifier: String
    public var uniqueIdentifier: String?
    public var url: String?
    public var applicationGroupIdentifier: String
    /// Bytes on the wire; 0 when the extension did not say (allowed for non-essential downloads only). A promise
    /// only where `sizeIsExact`; otherwise an estimate for progress and the allowance's reservation.
    public var fileSize: Int64
    public var priority: Int64
    public var state: Int32
    public var isEssential: Bool
    /// Expected SHA-256 as 64 hex digits (a bahost addition), or nil.
    public var sha256: String?
    /// `Name: value` request headers.
    public var httpHeaders: [String]
    /// The networks it avoids (Apple's `allowsExpensiveNetworkAccess` and `allowsConstrainedNetworkAccess`, false).
    public var networkAccess: NetworkAccess

    public init(
        kind: Kind = .url, identifier: String, uniqueIdentifier: String? = nil, url: String?,
        applicationGroupIdentifier: String, fileSize: Int64, priority: Int64 = Int64(BA_DOWNLOAD_PRIORITY_DEFAULT),
        state: Int32 = BA_DOWNLOAD_STATE_CREATED.rawValue, isEssential: Bool = false, sha256: String? = nil,
        httpHeaders: [String] = [], networkAccess: NetworkAccess = []
    ) {
        self.kind = kind
        self.identifier = identifier
        self.uniqueIdentifier = uniqueIdentifier
        self.url = url
        self.applicationGroupIdentifier = applicationGroupIdentifier
        self.fileSize = fileSize
        self.priority = priority
        self.state = state
        self.isEssential = isEssential
        self.sha256 = sha256
        self.httpHeaders = httpHeaders
        self.networkAccess = networkAccess
    }

    // Codable by hand only so that a download that avoids no network encodes as it did before 1.2.
    private enum CodingKeys: String, CodingKey {
        case kind, identifier, uniqueIdentifier, url, applicationGroupIdentifier, fileSize, priority, state
        case isEssential, sha256, httpHeaders, networkAccess
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let access = try c.decodeIfPresent(Int64.self, forKey: .networkAccess) ?? 0
        guard let networkAccess = NetworkAccess(exactly: access) else {
            throw DecodingError.dataCorruptedError(
                forKey: .networkAccess, in: c, debugDescription: "unknown network access bits")
        }
        self.init(
            kind: try c.decode(Kind.self, forKey: .kind), identifier: try c.decode(String.self, forKey: .identifier),
            uniqueIdentifier: try c.decodeIfPresent(String.self, forKey: .uniqueIdentifier),
            url: try c.decodeIfPresent(String.self, forKey: .url),
            applicationGroupIdentifier: try c.decode(String.self, forKey: .applicationGroupIdentifier),
            fileSize: try c.decode(Int64.self, forKey: .fileSize), priority: try c.decode(Int64.self, forKey: .priority),
            state: try c.decode(Int32.self, forKey: .state), isEssential: try c.decode(Bool.self, forKey: .isEssential),
            sha256: try c.decodeIfPresent(String.self, forKey: .sha256),
            httpHeaders: try c.decode([String].self, forKey: .httpHeaders),
            networkAccess: networkAccess)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(identifier, forKey: .identifier)
        try c.encodeIfPresent(uniqueIdentifier, forKey: .uniqueIdentifier)
        try c.encodeIfPresent(url, forKey: .url)
        try c.encode(applicationGroupIdentifier, forKey: .applicationGroupIdentifier)
        try c.encode(fileSize, forKey: .fileSize)
        try c.encode(priority, forKey: .priority)
        try c.encode(state, forKey: .state)
        try c.encode(isEssential, forKey: .isEssential)
        try c.encodeIfPresent(sha256, forKey: .sha256)
        try c.encode(httpHeaders, forKey: .httpHeaders)
        if !networkAccess.isEmpty { try c.encode(networkAccess.rawValue, forKey: .networkAccess) }
    }
}

/// The networks a download avoids: the C ABI's `ba_network_access_t` bits (ba/download.h). Empty, Apple's default,
/// allows any network.
public struct NetworkAccess: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue & Self.known.rawValue }

    /// `allowsExpensiveNetworkAccess = false`: not while NetworkManager says the connection is metered.
    public static let avoidsExpensive = NetworkAccess(rawValue: BA_NETWORK_ACCESS_AVOIDS_EXPENSIVE.rawValue)
    /// `allowsConstrainedNetworkAccess = false`: not while the user has marked the connection metered.
    public static let avoidsConstrained = NetworkAccess(rawValue: BA_NETWORK_ACCESS_AVOIDS_CONSTRAINED.rawValue)
    /// Exactly `value`'s bits, nil when it has one this version does not know (a frame of the service's protocol,
    /// which is written by the same version).
    public init?(exactly value: Int64) {
        guard value >= 0, value & ~Int64(Self.known.rawValue) == 0 else { return nil }
        rawValue = UInt32(value)
    }

    /// The bits this version knows; others, from a newer caller, are dropped.
    static let known = NetworkAccess(
        uncheckedRawValue: BA_NETWORK_ACCESS_AVOIDS_EXPENSIVE.rawValue | BA_NETWORK_ACCESS_AVOIDS_CONSTRAINED.rawValue)
    private init(uncheckedRawValue: UInt32) { rawValue = uncheckedRawValue }
}

extension Download {
    /// Whether a transfer must deliver exactly `fileSize` bytes: for essential downloads (Apple's header says a
    /// mismatch fails the download, and Apple's engineers narrowed that to essential ones: real apps give estimates
    /// for the rest) and for asset packs, whose size the pack's own manifest states.
    public var sizeIsExact: Bool { fileSize > 0 && (isEssential || kind == .assetPack) }

    /// The download with Apple's system-provided identifier, "<ClassName>.<appGroupID>.<UUID>", when it has none.
    public func withUniqueIdentifier() -> Download {
        guard uniqueIdentifier == nil else { return self }
        var copy = self
        copy.uniqueIdentifier = Self.newUniqueIdentifier(group: applicationGroupIdentifier)
        return copy
    }

    public static func newUniqueIdentifier(group: String) -> String {
        uniqueIdentifier(group: group, uuidText: UUIDText.random())
    }

    /// Apple's form of a system-provided identifier, with a given UUID as text.
    public static func uniqueIdentifier(group: String, uuidText: String) -> String {
        "BAURLDownload.\(group).\(uuidText)"
    }
}

extension Download {
    /// A `ba_download_t`'s fields, copied: `uniqueIdentifier` nil where the caller left it NULL; a download of kind URL
    /// without a URL is taken for the manifest, as the ABI's readers take it. The caller checked what it needs.
    public init(_ d: ba_download_t) {
        func text(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        let isURL = d.kind == Int32(BA_DOWNLOAD_KIND_URL.rawValue) && d.url != nil
        self.init(
            kind: isURL ? .url : .manifest, identifier: text(d.identifier) ?? "",
            uniqueIdentifier: text(d.unique_identifier), url: isURL ? text(d.url) : nil,
            applicationGroupIdentifier: text(d.application_group_identifier) ?? "", fileSize: d.file_size,
            priority: d.priority, state: d.state, isEssential: d.essential, sha256: isURL ? text(d.sha256) : nil,
            httpHeaders: isURL ? (0..<Int(d.http_header_count)).compactMap { text(d.http_headers[$0]) } : [],
            networkAccess: Int(d.struct_size) >= MemoryLayout<ba_download_t>.offset(of: \.network_access)! + 8
                ? NetworkAccess(rawValue: UInt32(truncatingIfNeeded: d.network_access)) : [])
    }
}

extension Download {
    /// Calls `body` with a `ba_download_t` describing the download, valid only during the call.
    public func withABI<R>(_ body: (UnsafePointer<ba_download_t>) -> R) -> R {
        // Each string lends its own NUL-terminated bytes (a native string's, without a copy); only the headers, a
        // list of pointers, are copied: a copy of every string was a large part of a fetch from C (DECISIONS.md #39).
        identifier.withCString { identifier in
            applicationGroupIdentifier.withCString { group in
                Self.withOptionalCString(uniqueIdentifier) { unique in
                    Self.withOptionalCString(url) { url in
                        Self.withOptionalCString(sha256) { sha256 in
                            withHeaderPointers { headers in
                                var d = ba_download_t(
                                    struct_size: UInt32(MemoryLayout<ba_download_t>.size), kind: kind.rawValue,
                                    identifier: identifier, unique_identifier: unique, url: url,
                                    application_group_identifier: group, file_size: fileSize, priority: priority,
                                    state: state, essential: isEssential, sha256: sha256,
                                    http_headers: headers.isEmpty ? nil : headers.baseAddress,
                                    http_header_count: UInt32(headers.count),
                                    network_access: UInt64(networkAccess.rawValue))
                                return body(&d)
                            }
                        }
                    }
                }
            }
        }
    }

    private static func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let text else { return body(nil) }
        return text.withCString(body)
    }

    /// The headers as C strings: copies, freed after `body`; none allocated when there are none (most downloads).
    private func withHeaderPointers<R>(_ body: (UnsafeBufferPointer<UnsafePointer<CChar>?>) -> R) -> R {
        guard !httpHeaders.isEmpty else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        let copies = httpHeaders.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        return copies.map { $0.map { UnsafePointer($0) } }.withUnsafeBufferPointer(body)
    }
}

/// A download that policy refused before any byte was fetched, and Apple's error for it.
public struct RejectedDownload: Sendable, Hashable {
    public var download: Download
    public var error: HostError

    public init(download: Download, error: HostError) {
        self.download = download
        self.error = error
    }
}
