@_exported import BackgroundAssets

/// The extension of an app whose asset packs Apple hosts (StoreKit's `StoreDownloaderExtension`): on Apple, an
/// empty refinement of `ManagedDownloaderExtension`, and so it is here.
///
/// bahost has no App Store to host packs, so an app ported from Apple hosting serves its packs itself (`bahost pack`
/// makes them, any HTTPS server serves them) and its Info.plist says so: `BAUsesAppleHosting` false, and
/// `BAManifestURL` naming the download manifest. The extension's code does not change: it is served by the
/// self-hosted flow, exactly as a `ManagedDownloaderExtension`. This module declares nothing else of StoreKit.
public protocol StoreDownloaderExtension: ManagedDownloaderExtension {}
