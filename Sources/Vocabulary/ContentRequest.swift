/// Apple's BAContentRequest, by raw value.
public enum ContentRequest: Int32, Sendable, Codable, CaseIterable {
    case install = 1
    case update = 2
    case periodic = 3
    case languageChange = 4

    /// The name `bahost run --event` takes.
    public var name: String {
        switch self {
        case .install: "install"
        case .update: "update"
        case .periodic: "periodic"
        case .languageChange: "language-change"
        }
    }

    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = match
    }
}

/// Apple's BAAppExtensionInfo: bytes the extension may still schedule before the app's first launch; nil when
/// unrestricted.
public struct AppExtensionInfo: Sendable, Hashable, Codable {
    public var restrictedDownloadSizeRemaining: Int64?
    public var restrictedEssentialDownloadSizeRemaining: Int64?

    public init(restrictedDownloadSizeRemaining: Int64?, restrictedEssentialDownloadSizeRemaining: Int64?) {
        self.restrictedDownloadSizeRemaining = restrictedDownloadSizeRemaining
        self.restrictedEssentialDownloadSizeRemaining = restrictedEssentialDownloadSizeRemaining
    }

    public static let unrestricted = AppExtensionInfo(
        restrictedDownloadSizeRemaining: nil, restrictedEssentialDownloadSizeRemaining: nil)
}
