import AppConfig
import Foundation
import Queue
import Vocabulary

/// An installed app as the engine reports it: who it is, its group, and how it is managed; never the queue's row.
public struct InstalledApp: Sendable, Hashable {
    public var appIdentifier: String
    public var appGroupIdentifier: String
    /// `BAHasManagedAssetPacks`: the host manages the app's asset packs.
    public var hasManagedAssetPacks: Bool
    /// Its initial restrictions were lifted by its first launch.
    public var launched: Bool
    /// `BAHostShowsDownloadProgress`: the desktop shows the progress of its foreground downloads.
    public var showsDownloadProgress: Bool = false
    /// A Flatpak app's own folder (`~/.var/app/APP_ID`), where its container lives; nil for a native app.
    public var sandboxHome: String?
    /// `BAHostSharesWithPeers`: its managed packs may be shared with other machines on the network.
    public var sharesWithPeers: Bool = false
}

extension AppRecord {
    var installed: InstalledApp {
        InstalledApp(
            appIdentifier: appIdentifier, appGroupIdentifier: appGroupIdentifier,
            hasManagedAssetPacks: hasManagedAssetPacks, launched: launched,
            showsDownloadProgress: showsDownloadProgress, sandboxHome: sandboxHome,
            sharesWithPeers: sharesWithPeers)
    }

    /// An app as its Info.plist declares it, with its extension at `extensionPath`.
    init(_ config: AppConfiguration, extensionPath: String, allowInsecureLoopback: Bool) {
        let restrictions = config.initialRestrictions
        self.init(
            appIdentifier: config.appIdentifier, appGroupIdentifier: config.appGroupIdentifier,
            pluginPath: extensionPath, manifestURL: config.manifestURL.absoluteString,
            domainAllowList: restrictions.domainAllowList, downloadAllowance: restrictions.downloadAllowance,
            essentialDownloadAllowance: restrictions.essentialDownloadAllowance,
            allowInsecureLoopback: allowInsecureLoopback, hasManagedAssetPacks: config.hasManagedAssetPacks,
            showsDownloadProgress: config.showsDownloadProgress, sharesWithPeers: config.sharesWithPeers)
    }
}
