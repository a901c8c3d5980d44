import BackgroundAssets

/// The managed example extension: as on Apple, its defaults do everything (the host downloads and updates the
/// app's packs); it only says which packs it is asked about, and keeps every one.
struct LevelsManagedExtension: ManagedDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool {
        print("shouldDownload \(assetPack.id) version \(assetPack.version): yes")
        return true
    }
}

/// The one line that makes the type loadable by bahost.
@_cdecl("ba_extension_entry") public func entry() -> UnsafeRawPointer { baExtensionEntry(LevelsManagedExtension.self) }
