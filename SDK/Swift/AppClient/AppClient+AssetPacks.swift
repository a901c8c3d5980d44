import ServiceWire
import Vocabulary

/// `AssetPackManager`'s requests, each its reply checked: what the Swift SDK and the C library ask of the service.
extension AppClient {
    /// [any thread; blocks for a round trip each] The packs the server offers to the app, and the manifest's primary
    /// language and the app's resolved one.
    public func assetPackCatalogue() throws(HostError) -> (packs: [AssetPackInfo], primary: String?, resolved: String?) {
        guard case .assetPacks(let packs) = try request(.assetPacks),
            case .assetPackLanguages(let primary, let resolved) = try request(.assetPackLanguages)
        else { throw Self.invalid("the service answered with something else") }
        return (packs, primary, resolved)
    }

    /// [any thread; blocks for a round trip] A pack's `AssetPack.Status`, as its raw value.
    public func assetPackStatus(_ id: String) throws(HostError) -> Int {
        guard case .assetPackStatus(let raw) = try request(.assetPackStatus(id)) else {
            throw Self.invalid("the service answered with something else")
        }
        return raw
    }

    /// [any thread; blocks until the pack is installed or failed] `ensureLocalAvailability`.
    public func ensureAssetPack(_ id: String, requireLatestVersion: Bool) throws(HostError) {
        _ = try request(.ensureAssetPack(id, requireLatestVersion: requireLatestVersion))
    }

    /// [any thread; blocks for a round trip] `checkForUpdates()`.
    public func checkForAssetPackUpdates() throws(HostError) -> (updating: [String], removed: [String]) {
        guard case .assetPackUpdates(let updating, let removed) = try request(.checkForAssetPackUpdates) else {
            throw Self.invalid("the service answered with something else")
        }
        return (updating, removed)
    }

    /// [any thread; blocks for a round trip] The app's resolved language for localized packs; nil when there is none
    /// or the service cannot be reached.
    public var resolvedAssetPackLanguage: String? {
        guard case .assetPackLanguages(_, let resolved)? = try? request(.assetPackLanguages) else { return nil }
        return resolved
    }

    /// [any thread; blocks for a round trip] `reconcilePreferredLanguages()`, with this process's preferred languages.
    public func reconcileAssetPackLanguages() throws(HostError) {
        _ = try request(.reconcileAssetPackLanguages(preferred: LanguageTags.preferred()))
    }
}
