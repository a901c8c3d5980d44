import CBAExtension
import Foundation
import Vocabulary

/// Apple's initial download restrictions for one app, in on-the-wire bytes, and what has been used of them.
/// They apply until the app's first launch (`restricted == false` afterwards).
public struct Allowance: Sendable, Hashable, Codable {
    public var restricted: Bool
    /// `BADownloadAllowance`: non-essential downloads, the manifest included.
    public var downloadAllowance: Int64
    /// `BAEssentialDownloadAllowance`.
    public var essentialDownloadAllowance: Int64
    /// Bytes already counted against each: declared sizes of admitted downloads, and bytes actually received for
    /// downloads of unknown size and for the manifest.
    public var usedBytes: Int64
    public var usedEssentialBytes: Int64

    public init(
        restricted: Bool, downloadAllowance: Int64, essentialDownloadAllowance: Int64, usedBytes: Int64 = 0,
        usedEssentialBytes: Int64 = 0
    ) {
        self.restricted = restricted
        self.downloadAllowance = downloadAllowance
        self.essentialDownloadAllowance = essentialDownloadAllowance
        self.usedBytes = usedBytes
        self.usedEssentialBytes = usedEssentialBytes
    }

    /// What `BAAppExtensionInfo` tells the extension: bytes still free, or nil once unrestricted.
    public var extensionInfo: AppExtensionInfo {
        guard restricted else { return .unrestricted }
        return AppExtensionInfo(
            restrictedDownloadSizeRemaining: max(0, downloadAllowance - usedBytes),
            restrictedEssentialDownloadSizeRemaining: max(0, essentialDownloadAllowance - usedEssentialBytes))
    }

    /// Admits a download whose declared size counts against the allowance now (Apple's 112 when it would not fit).
    /// Downloads of unknown size are admitted while anything is left and count as their bytes arrive.
    public mutating func admit(_ download: Download) -> HostError? {
        guard restricted else { return nil }
        let (allowance, used) = download.isEssential
            ? (essentialDownloadAllowance, usedEssentialBytes) : (downloadAllowance, usedBytes)
        let kind = download.isEssential ? "essential download allowance" : "download allowance"
        if download.fileSize == 0 {
            guard used < allowance else {
                return HostError(
                    BA_ERROR_SESSION_DOWNLOAD_DISALLOWED_BY_ALLOWANCE,
                    "'\(download.identifier)' has no declared size and the \(kind) of \(allowance) bytes is used up")
            }
            return nil
        }
        guard used + download.fileSize <= allowance else {
            return HostError(
                BA_ERROR_DOWNLOAD_WOULD_EXCEED_ALLOWANCE,
                "'\(download.identifier)' (\(download.fileSize) bytes) would exceed the \(kind): "
                    + "\(max(0, allowance - used)) of \(allowance) bytes left")
        }
        if download.isEssential { usedEssentialBytes += download.fileSize } else { usedBytes += download.fileSize }
        return nil
    }

    /// Bytes a transfer may still receive when its size was not declared (the manifest, or a download made with
    /// a deprecated initializer); nil when nothing limits it.
    public func unreservedBytesLeft(essential: Bool) -> Int64? {
        guard restricted else { return nil }
        return essential ? essentialDownloadAllowance - usedEssentialBytes : downloadAllowance - usedBytes
    }

    /// Counts bytes received by a transfer of undeclared size.
    public mutating func charge(_ bytes: Int64, essential: Bool) {
        if essential { usedEssentialBytes += bytes } else { usedBytes += bytes }
    }

    /// Apple's 203 for a transfer of undeclared size that cannot start because nothing is left, or nil.
    public func refusalToStart(_ what: String, essential: Bool) -> HostError? {
        guard let left = unreservedBytesLeft(essential: essential), left <= 0 else { return nil }
        return HostError(
            BA_ERROR_SESSION_DOWNLOAD_DISALLOWED_BY_ALLOWANCE, "\(what): the download allowance is used up")
    }

    /// Apple's 204 for a transfer of undeclared size that received more than was left.
    public static func exceeded(_ what: String, limit: Int64) -> HostError {
        HostError(
            BA_ERROR_SESSION_DOWNLOAD_ALLOWANCE_EXCEEDED,
            "\(what) passed the \(limit) bytes left in the download allowance")
    }
}

/// The policy for one app at one moment: everything a download must satisfy before a byte of it is fetched.
public struct AppPolicy: Sendable {
    public var rules: DownloadRules
    public var allowList: DomainAllowList
    public var allowance: Allowance

    public init(rules: DownloadRules, allowList: DomainAllowList, allowance: Allowance) {
        self.rules = rules
        self.allowList = allowList
        self.allowance = allowance
    }

    /// Checks the URL of a request or of a redirect hop: https (or loopback http behind the flag), and while the
    /// app is restricted, on the domain allow list (Apple's 202).
    public func checkURL(_ url: String) -> HostError? {
        DownloadValidation.checkURL(url, rules: rules) ?? checkAllowList(url)
    }

    /// While the app is restricted, a URL off the domain allow list is refused (Apple's 202).
    public func checkAllowList(_ url: String) -> HostError? {
        guard allowance.restricted && !allowList.permits(url) else { return nil }
        return HostError(
            BA_ERROR_SESSION_DOWNLOAD_DISALLOWED_BY_DOMAIN,
            "\(URLComponentsHost(url)) is not on BADownloadDomainAllowList; it is permitted once the app has launched")
    }

    /// Admits one download for `request` (nil: scheduled through the manager): shape, URL, allow list and allowance.
    public mutating func admit(_ download: Download, for request: ContentRequest?) -> HostError? {
        DownloadValidation.check(download, for: request, rules: rules) ?? download.url.flatMap(checkAllowList)
            ?? allowance.admit(download)
    }
}

private func URLComponentsHost(_ url: String) -> String {
    (URLComponents(string: url)?.host ?? url.printableURL(limit: 200)).printable(limit: 300)
}
