import BackgroundAssets
import StoreKit

/// An Apple-hosted app's extension, as written for Apple (StoreKit's `StoreDownloaderExtension`), unchanged: bahost
/// serves it through the self-hosted flow (its app's Info.plist names a download manifest instead of Apple hosting).
/// It keeps every pack but the ones it was told to skip.
struct LevelsStoreExtension: StoreDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool {
        !assetPack.id.hasPrefix("skip-")
    }
}

/// The one line that makes the type loadable by bahost.
@_cdecl("ba_extension_entry") public func entry() -> UnsafeRawPointer { baExtensionEntry(LevelsStoreExtension.self) }
