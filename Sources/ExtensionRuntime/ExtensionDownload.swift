import CBAExtension
import Foundation

/// A download as it crosses the C ABI (`ba_download_t`), in the host's terms. The host never sees the
/// extension's `BADownload` objects: only these fields, decoded and checked from the wire.
public struct ExtensionDownload: Sendable, Hashable, Codable {
    /// What the download fetches: an asset URL, or the app's manifest (which reaches an extension only as a failure).
    public enum Kind: Int32, Sendable, Codable {
        case url = 0
        case manifest = 1
    }

    public var kind: Kind
    public var identifier: String
    public var uniqueIdentifier: String?
    public var url: String?
    public var applicationGroupIdentifier: String
    /// Exact bytes on the wire; 0 when the extension did not say (allowed for non-essential downloads only).
    public var fileSize: Int64
    public var priority: Int64
    public var state: Int32
    public var isEssential: Bool
    /// Expected SHA-256 as 64 hex digits (a bahost addition), or nil.
    public var sha256: String?
    /// `Name: value` request headers.
    public var httpHeaders: [String]

    public init(
        kind: Kind = .url, identifier: String, uniqueIdentifier: String? = nil, url: String?,
        applicationGroupIdentifier: String, fileSize: Int64, priority: Int64 = Int64(BA_DOWNLOAD_PRIORITY_DEFAULT),
        state: Int32 = BA_DOWNLOAD_STATE_CREATED.rawValue, isEssential: Bool = false, sha256: String? = nil,
        httpHeaders: [String] = []
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
    }
}

extension ExtensionDownload {
    /// The download with Apple's system-provided identifier, "<ClassName>.<appGroupID>.<UUID>", when it has none.
    public func withUniqueIdentifier() -> ExtensionDownload {
        guard uniqueIdentifier == nil else { return self }
        var copy = self
        copy.uniqueIdentifier = Self.newUniqueIdentifier(group: applicationGroupIdentifier)
        return copy
    }

    public static func newUniqueIdentifier(group: String) -> String { "BAURLDownload.\(group).\(UUID().uuidString)" }
}

/// An error as the ABI carries it: Apple's `BAErrorDomain` codes, or another layer's domain.
public struct HostError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public var code: Int64
    public var domain: String
    public var message: String

    public init(code: Int64, domain: String, message: String) {
        self.code = code
        self.domain = domain
        self.message = message
    }

    /// An error in Apple's `BAErrorDomain`.
    public init(_ code: ba_error_code_t, _ message: String) {
        self.init(code: Int64(code.rawValue), domain: BA_ERROR_DOMAIN, message: message)
    }

    public var description: String { "\(domain) \(code): \(message)" }
}
