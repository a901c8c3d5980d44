/// The extension of an app whose asset packs the system manages (Apple's `ManagedDownloaderExtension`; the app's
/// Info.plist sets `BAHasManagedAssetPacks`). Its defaults do everything: the host downloads every essential and
/// prefetch pack that names the installation event, and keeps installed packs up to date. Don't implement the
/// inherited requirements; implement `shouldDownload(_:)` only to veto a pack.
///
/// Export it as any extension: `@_cdecl("ba_extension_entry") public func entry() -> UnsafeRawPointer {
/// baExtensionEntry(MyExtension.self) }`.
public protocol ManagedDownloaderExtension: BADownloaderExtension {
    /// Whether the host may download `assetPack` on its own now. By default, the system automatically downloads all
    /// applicable asset packs with either "essential" or "prefetch" download policies for the current installation
    /// event type.
    func shouldDownload(_ assetPack: AssetPack) -> Bool
}

extension ManagedDownloaderExtension {
    public func shouldDownload(_ assetPack: AssetPack) -> Bool { true }
}
