import BackgroundAssetsTesting
import Foundation
import StoreKit
import TestSupport
import Testing

/// An extension written for Apple's hosting, as it is: StoreKit's protocol.
private struct HostedLevels: StoreDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool { assetPack.id != "skip" }
}

/// StoreKit's one declaration: an Apple-hosted app's extension is a managed extension here, served by the
/// self-hosted flow, so its code ports unchanged.
@Suite(.ownThreads) struct StoreDownloaderExtensionTests {
    /// The protocol refines the managed extension's, which refines the downloader extension's, as on Apple; what the
    /// extension does not implement has Apple's defaults.
    @Test func aStoreDownloaderExtensionIsAManagedOne() {
        let hosted: any BADownloaderExtension = HostedLevels()
        #expect(hosted is any ManagedDownloaderExtension && hosted is any StoreDownloaderExtension)
        #expect(type(of: hosted) is any StoreDownloaderExtension.Type)
    }

    /// The Apple-hosted example, built as bahost loads it, answers in its own process within a budget: the packs it
    /// skips and the others, each in its window.
    @Test func theBuiltExtensionAnswersInAWindowOfItsOwn() throws {
        let harness = ExtensionHarness(
            plugin: ExtensionHarness.builtProduct("StoreHostedExampleExtension"), budget: .seconds(10))
        let skipped = try harness.shouldDownload(
            AssetPackInfo(id: "skip-hd-textures", version: 1, downloadSize: 1 << 20, userInfo: nil))
        try skipped.requireReturned(within: .seconds(5))
        #expect(skipped.assetPackAnswer == false)
        let kept = try harness.shouldDownload(
            AssetPackInfo(id: "intro", version: 2, downloadSize: 1 << 10, userInfo: nil))
        try kept.requireReturned(within: .seconds(5))
        #expect(kept.assetPackAnswer == true)
        #expect(kept.outcome.abiVersion != nil, "the window did not load the extension through the C ABI")
    }
}
