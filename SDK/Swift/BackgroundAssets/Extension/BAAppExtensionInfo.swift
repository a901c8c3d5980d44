/// What the extension may still schedule before the app's first launch (Apple's `BAAppExtensionInfo`).
public final class BAAppExtensionInfo: NSObject, Sendable {
    /// Bytes of non-essential downloads that may still be scheduled; nil once the app has launched.
    public let restrictedDownloadSizeRemaining: Int?
    /// Bytes of essential downloads that may still be scheduled; nil once the app has launched.
    public let restrictedEssentialDownloadSizeRemaining: Int?

    init(restrictedDownloadSizeRemaining: Int?, restrictedEssentialDownloadSizeRemaining: Int?) {
        self.restrictedDownloadSizeRemaining = restrictedDownloadSizeRemaining
        self.restrictedEssentialDownloadSizeRemaining = restrictedEssentialDownloadSizeRemaining
    }
}
