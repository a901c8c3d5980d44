/// A Swift extension project: a package whose dynamic library product is the extension, every entry point stubbed
/// with Apple's documentation, and a Swift Testing test that holds it to its budget with `BackgroundAssetsTesting`.
struct SwiftTemplate {
    let scaffold: ExtensionScaffold

    private var name: String { scaffold.name }

    var package: String {
        #"""
        // swift-tools-version: 6.0
        import PackageDescription

        let package = Package(
            name: "\#(name)",
            // The extension is a dynamic library: `swift build` makes .build/debug/lib\#(name).so for bahost to load.
            products: [.library(name: "\#(name)", type: .dynamic, targets: ["\#(name)"])],
            dependencies: [\#(scaffold.package.dependency)],
            targets: [
                .target(name: "\#(name)", dependencies: [.product(name: "BackgroundAssets", package: "bahost")]),
                .testTarget(
                    name: "\#(name)Tests",
                    dependencies: [
                        .product(name: "BackgroundAssetsTesting", package: "bahost"),
                        // Built beside the tests: the harness runs the extension in it, as bahost does.
                        .product(name: "bahost-extension-runner", package: "bahost"),
                    ]),
            ]
        )

        """#
    }

    var extensionSource: String { scaffold.managed ? managedSource : unmanagedSource }

    private var unmanagedSource: String {
        #"""
        import BackgroundAssets

        /// The app's asset-downloader extension. It compiles for Apple's Background Assets as it is; bahost needs only
        /// the `ba_extension_entry` line at the end.
        @main
        struct \#(name): BADownloaderExtension {
            static let appGroup = "\#(scaffold.appGroup)"

            /// The manifest served at BAManifestURL: `{"assets": [{"id", "url", "size", "essential"}]}`.
            struct Manifest: Decodable {
                struct Asset: Decodable {
                    var id: String
                    var url: URL
                    var size: Int
                    var essential: Bool?
                }
                var assets: [Asset]
            }

            /// Invoked by the system when the extension should check for updated content, upon the events defined in
            /// `BAContentRequest`. Return the downloads to schedule: `BADownloadManager` cannot schedule any while this
            /// runs. `manifestURL` is read-only and is deleted after this returns; copy it out to keep it.
            func downloads(for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo)
                -> Set<BADownload>
            {
                guard let manifest = try? JSONDecoder().decode(Manifest.self, from: Data(contentsOf: manifestURL)) else {
                    print("the manifest is not in the expected form")
                    return []
                }
                // Essential downloads are allowed only while the app is installed or updated.
                let essentialAllowed = request == .install || request == .update
                return Set(
                    manifest.assets.map { asset in
                        let essential = essentialAllowed && asset.essential == true
                        return BAURLDownload(
                            identifier: asset.id, request: URLRequest(url: asset.url), essential: essential,
                            fileSize: asset.size, applicationGroupIdentifier: Self.appGroup,
                            priority: essential ? .max : .default)
                    })
            }

            /// A download has tried to start but received an authentication challenge.
            func backgroundDownload(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
                -> (URLSession.AuthChallengeDisposition, URLCredential?)
            {
                (.performDefaultHandling, nil)
            }

            /// A download has failed and there is no `BADownloadManager` delegate to handle it. The app's manifest
            /// arrives here too, as a download that is not a `BAURLDownload`. It may be rescheduled.
            func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error) {
                guard type(of: failedDownload) == BAURLDownload.self else { return }
                if failedDownload.isEssential {
                    // An essential download that failed may be retried as a non-essential one.
                    try? BADownloadManager.shared.scheduleDownload(failedDownload.removingEssential())
                }
            }

            /// A download has finished and there is no `BADownloadManager` delegate to handle it. The file at `fileURL`
            /// must be moved before this returns, or it is deleted; move it rather than copy it.
            func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
                guard
                    let assets = FileManager.default.containerURL(
                        forSecurityApplicationGroupIdentifier: Self.appGroup)?.appendingPathComponent("Assets")
                else { return }
                let destination = assets.appendingPathComponent(finishedDownload.identifier)
                try? FileManager.default.createDirectory(at: assets, withIntermediateDirectories: true)
                try? FileManager.default.removeItem(at: destination)
                try? FileManager.default.moveItem(at: fileURL, to: destination)
            }

            /// Called shortly before the extension is terminated, when its window's time is up: save state quickly.
            func extensionWillTerminate() {}
        }

        /// The one line that makes the type loadable by bahost.
        @_cdecl("ba_extension_entry") public func entry() -> UnsafeRawPointer { baExtensionEntry(\#(name).self) }

        """#
    }

    private var managedSource: String {
        #"""
        import BackgroundAssets

        /// The app's managed asset-pack extension. The system downloads and updates the app's asset packs by itself;
        /// as Apple advises, implement none of `BADownloaderExtension`'s requirements except, optionally,
        /// `backgroundDownload(_:didReceive:)`.
        @main
        struct \#(name): ManagedDownloaderExtension {
            /// Whether the system may download `assetPack`. By default, the system automatically downloads all
            /// applicable asset packs with either essential or prefetch download policies for the current installation
            /// event type.
            func shouldDownload(_ assetPack: AssetPack) -> Bool {
                true
            }

            /// A download has tried to start but received an authentication challenge.
            func backgroundDownload(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
                -> (URLSession.AuthChallengeDisposition, URLCredential?)
            {
                (.performDefaultHandling, nil)
            }
        }

        /// The one line that makes the type loadable by bahost.
        @_cdecl("ba_extension_entry") public func entry() -> UnsafeRawPointer { baExtensionEntry(\#(name).self) }

        """#
    }

    var test: String {
        let body =
            scaffold.managed
            ? #"""
            @Test func answersShouldDownloadWithinItsBudget() throws {
                let harness = ExtensionHarness(plugin: ExtensionHarness.builtProduct("\#(name)"), budget: .seconds(2))
                let run = try harness.shouldDownload(
                    AssetPackInfo(id: "intro", version: 1, downloadSize: 1_048_576, userInfo: nil))
                try run.requireReturned(within: .milliseconds(500))  // throws, naming the stop reason, if not
                #expect(run.assetPackAnswer == true)
            }
            """#
            : #"""
            @Test func answersTheInstallRequestWithinItsBudget() throws {
                let harness = ExtensionHarness(
                    plugin: ExtensionHarness.builtProduct("\#(name)"), budget: .seconds(2),
                    appGroupIdentifier: "\#(scaffold.appGroup)")
                let manifest = try Data(contentsOf: URL(fileURLWithPath: #filePath)
                    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                    .appendingPathComponent("manifest.json"))
                let run = try harness.contentRequest(.install, manifest: manifest)
                try run.requireReturned(within: .milliseconds(500))  // throws, naming the stop reason, if not
                #expect(run.downloads.map(\.identifier) == ["level-1"])
            }
            """#
        return #"""
            import BackgroundAssetsTesting
            import Foundation
            import Testing

            // The extension runs exactly as bahost runs it: its own process, a window with a budget, the same stop
            // reasons. `swift test` builds lib\#(name).so first.
            \#(body)

            """#
    }
}
