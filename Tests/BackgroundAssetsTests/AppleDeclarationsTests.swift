import BackgroundAssets
import Foundation
import StoreKit
import SystemPackage
import Testing

// Code as written for Apple's shipping SDKs, compiled in Swift 6 mode with a plain import (as an app's module sees
// the SDK): each declaration it names must have Apple's exact shape, or this file does not compile. What must not
// compile (an actor-isolated member read without `await`) is Tests/Shipping/apple-api.sh's.

/// A controller as apps write them: a class that is not Sendable, capturing `self` in the handler of the closure
/// forms of exclusive control, whose handler Apple's shipping SDKs do not declare `@Sendable`.
private final class LevelsController {
    var acquisitions: [Bool] = []

    @available(*, deprecated)
    func takeControl(of manager: BADownloadManager) {
        manager.withExclusiveControl { acquired, _ in self.acquisitions.append(acquired) }
        manager.withExclusiveControl(beforeDate: Date()) { acquired, error in
            if error == nil { self.acquisitions.append(acquired) }
        }
    }
}

/// An Apple-hosted app's extension: StoreKit's protocol, nothing else changed.
private struct AppleHostedExtension: StoreDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool { assetPack.id != "skip" }
}

/// A SwiftUI app's download controller: isolated to the main actor, its delegate methods marked so too, its state
/// not Sendable. Against Apple's SDK this conforms (the protocol comes from Objective-C); here, in Swift 6 mode, too.
@MainActor private final class DownloadController: NSObject, BADownloadManagerDelegate {
    var progress: [String: Double] = [:]
    var finished: [URL] = []
    var failures: [String] = []

    @MainActor func downloadDidBegin(_ download: BADownload) { progress[download.identifier] = 0 }
    @MainActor func downloadDidPause(_ download: BADownload) {}
    @MainActor func download(
        _ download: BADownload, didWriteBytes bytesWritten: Int64, totalBytesWritten: Int64,
        totalBytesExpectedToWrite: Int64
    ) {
        progress[download.identifier] = Double(totalBytesWritten) / Double(max(totalBytesExpectedToWrite, 1))
    }
    @MainActor func download(
        _ download: BADownload, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.performDefaultHandling, nil)
    }
    @MainActor func download(_ download: BADownload, failedWithError error: any Error) {
        failures.append(download.identifier)
    }
    @MainActor func download(_ download: BADownload, finishedWithFileURL fileURL: URL) { finished.append(fileURL) }
}

@Suite struct AppleDeclarationsTests {
    /// The main-actor controller is a delegate like any other.
    @MainActor @Test func aMainActorControllerIsADelegate() {
        let controller = DownloadController()
        BADownloadManager.shared.delegate = controller
        #expect(BADownloadManager.shared.delegate === controller)
        BADownloadManager.shared.delegate = nil
    }

    /// The declarations' exact types, as Apple's swiftinterface spells them.
    @available(*, deprecated)
    @Test func theManagersDeclarationsHaveApplesTypes() async throws {
        let closureForm: (BADownloadManager) -> (@escaping (Bool, (any Error)?) -> Void) -> Void =
            BADownloadManager.withExclusiveControl(_:)
        let beforeDate: (BADownloadManager) -> (Date, @escaping (Bool, (any Error)?) -> Void) -> Void =
            BADownloadManager.withExclusiveControl(beforeDate:perform:)
        let updates: (AssetPackManager) -> (String) -> AssetPackManager.StatusUpdates =
            AssetPackManager.statusUpdates(forAssetPackWithID:)
        // Isolated to the actor: read from another module with `await`.
        let everyUpdate = await AssetPackManager.shared.statusUpdates
        #expect(type(of: everyUpdate) == AssetPackManager.StatusUpdates.self)
        _ = (closureForm, beforeDate, updates, LevelsController.self)
        #expect((AppleHostedExtension() as any BADownloaderExtension) is any StoreDownloaderExtension)
    }

    /// Apple's 27 languages, as its swiftinterface spells them: `resolvedLanguage` a settable `Locale.Language?`,
    /// the language lists arrays, the localized readers nonisolated.
    @Test func theLanguageDeclarationsHaveApplesTypes() async throws {
        let resolved: ReferenceWritableKeyPath<AssetPackManager, Locale.Language?> = \AssetPackManager.resolvedLanguage
        let local: (AssetPackManager) async -> [Locale.Language] = { await $0.locallyAvailableLanguages }
        let reconcile: (AssetPackManager) async throws -> Void = { try await $0.reconcilePreferredLanguages() }
        let contents: (AssetPackManager) -> (FilePath, Locale.Language, Data.ReadingOptions) throws -> Data =
            AssetPackManager.contents(at:asLocalizedFor:options:)
        let descriptor: (AssetPackManager) -> (FilePath, Locale.Language) throws -> FileDescriptor =
            AssetPackManager.descriptor(for:asLocalizedFor:)
        let url: (AssetPackManager) -> (FilePath, Locale.Language) throws -> URL =
            AssetPackManager.url(for:asLocalizedFor:)
        let available: KeyPath<AssetPackManifest, [Locale.Language]> = \.availableLanguages
        let manifestResolved: KeyPath<AssetPackManifest, Locale.Language?> = \.resolvedLanguage
        let primary: KeyPath<AssetPackManifest, Locale.Language?> = \.primaryLanguage
        let localized: KeyPath<AssetPackManifest, Set<AssetPack>> = \.localizedAssetPacks
        let localizedFor: (AssetPackManifest) -> (Locale.Language) -> Set<AssetPack> =
            AssetPackManifest.localizedAssetPacks(for:)
        let language: KeyPath<AssetPack, Locale.Language?> = \.language
        let successes: KeyPath<AssetPackManager.LocalAvailabilityError, Set<AssetPack>> = \.successes
        let failures: KeyPath<AssetPackManager.LocalAvailabilityError, [AssetPack: any Error]> = \.failures
        _ = (resolved, local, reconcile, contents, descriptor, url, available, manifestResolved, primary, localized)
        _ = (localizedFor, language, successes, failures)

        // The lists in their documented order, the same at every reading: by tag, each language once.
        let packs: [(String, String?)] = [
            ("voice-fr", "fr"), ("voice-de", "de"), ("voice-fr-ca", "fr-CA"), ("voice-en", "en"), ("levels", nil),
        ]
        let entries = packs.map { id, language -> [String: Any] in
            var entry: [String: Any] = [
                "id": id, "version": 1, "url": "https://cdn.example.com/\(id).aar", "downloadSize": 1,
                "platforms": [String](), "downloadPolicy": [String: Any](),
            ]
            entry["language"] = language
            return entry
        }
        let manifest = try AssetPackManifest(
            from: JSONSerialization.data(withJSONObject: ["assetPacks": entries]), appGroupID: "group.com.example.levels")
        #expect(manifest.availableLanguages.map(\.minimalIdentifier) == ["de", "en", "fr", "fr-CA"])
        #expect(manifest.availableLanguages == manifest.availableLanguages)
    }
}
