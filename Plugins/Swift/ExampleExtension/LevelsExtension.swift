import BackgroundAssets

/// An asset-downloader extension written as for Apple's Background Assets: the type below would compile in an Xcode
/// Background Download extension, but for the checksum (a bahost addition). Its manifest is JSON:
/// `{"assets": [{"id": "level-1", "url": "https://…", "size": 1048576, "essential": true, "sha256": "…"}]}`.
@main
struct LevelsExtension: BADownloaderExtension {
    static let appGroup = "group.com.example.levels"

    struct Manifest: Decodable {
        struct Asset: Decodable {
            var id: String
            var url: URL
            var size: Int
            var essential: Bool?
            var sha256: String?
        }
        var assets: [Asset]
    }

    func downloads(for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo)
        -> Set<BADownload>
    {
        let manifest: Manifest
        do {
            manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: manifestURL))
        } catch {
            print("cannot read the manifest: \(error)")
            return []
        }
        // Essential downloads are only allowed when the app is being installed or updated.
        let essentialAllowed = request == .install || request == .update
        var budget = extensionInfo.restrictedDownloadSizeRemaining ?? .max
        var downloads = Set<BADownload>()
        let kept = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: Self.appGroup)?
            .appendingPathComponent("Assets")
        for asset in manifest.assets {
            // An asset already kept at its size is not fetched again (periodic and update requests).
            if let kept, (try? kept.appendingPathComponent(asset.id).resourceValues(forKeys: [.fileSizeKey]))?.fileSize
                == asset.size
            {
                continue
            }
            let essential = essentialAllowed && asset.essential == true
            if !essential {
                guard asset.size <= budget else { continue }
                budget -= asset.size
            }
            let priority: BADownload.Priority = essential ? .max : .default
            if let sha256 = asset.sha256 {
                downloads.insert(
                    BAURLDownload(
                        identifier: asset.id, request: URLRequest(url: asset.url), essential: essential,
                        fileSize: asset.size, applicationGroupIdentifier: Self.appGroup, priority: priority,
                        sha256: sha256))
            } else {
                downloads.insert(
                    BAURLDownload(
                        identifier: asset.id, request: URLRequest(url: asset.url), essential: essential,
                        fileSize: asset.size, applicationGroupIdentifier: Self.appGroup, priority: priority))
            }
        }
        print("returning \(downloads.count) downloads for \(request)")
        return downloads
    }

    func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error) {
        // The app's manifest arrives here too when it fails: it is not a BAURLDownload.
        guard type(of: failedDownload) == BAURLDownload.self else {
            print("the manifest failed: \(error.localizedDescription)")
            return
        }
        print("\(failedDownload.identifier) failed: \(error.localizedDescription)")
        if failedDownload.isEssential {
            do {
                try BADownloadManager.shared.scheduleDownload(failedDownload.removingEssential())
            } catch {
                print("cannot reschedule \(failedDownload.identifier): \(error.localizedDescription)")
            }
        }
    }

    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
        // The file must be moved before this returns, or the host deletes it: keep it in the app group's container.
        guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: Self.appGroup)
        else {
            print("no container for \(Self.appGroup)")
            return
        }
        let assets = container.appendingPathComponent("Assets")
        do {
            try FileManager.default.createDirectory(at: assets, withIntermediateDirectories: true)
            let destination = assets.appendingPathComponent(finishedDownload.identifier)
            try? FileManager.default.removeItem(at: destination)
            try FileManager.default.moveItem(at: fileURL, to: destination)
            print("kept \(finishedDownload.identifier) at \(destination.path)")
        } catch {
            print("cannot keep \(finishedDownload.identifier): \(error.localizedDescription)")
        }
    }

    func backgroundDownload(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    {
        // The app keeps the account's credential in the group's container ("USER:PASSWORD" in `credential`); a
        // credential the server already refused is not offered again.
        guard challenge.previousFailureCount == 0,
            let file = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: Self.appGroup)?
                .appendingPathComponent("credential"),
            let text = try? String(contentsOf: file, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { return (.cancelAuthenticationChallenge, nil) }
        let password = text[text.index(after: colon)...].trimmingCharacters(in: .newlines)
        return (.useCredential, URLCredential(user: String(text[..<colon]), password: password, persistence: .forSession))
    }

    func extensionWillTerminate() {
        print("extensionWillTerminate")
    }
}

// The one line bahost needs beyond Apple's code: export the extension through the C ABI.
@_cdecl("ba_extension_entry") public func entry() -> UnsafeRawPointer { baExtensionEntry(LevelsExtension.self) }
