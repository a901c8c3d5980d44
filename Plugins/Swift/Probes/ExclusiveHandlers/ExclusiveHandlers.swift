import BackgroundAssets

/// For the tests: each finished download takes exclusive control with the closure form of `withExclusiveControl`
/// in its callback and returns at once, as Apple's sample does; each handler logs when it runs and keeps control
/// a moment. Every handler must run, in order, before the window ends.
struct ExclusiveHandlers: BADownloaderExtension {
    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {
        let identifier = finishedDownload.identifier
        try? FileManager.default.removeItem(at: fileURL)
        BADownloadManager.shared.withExclusiveControl { acquired, error in
            print("handler \(identifier): \(acquired ? "acquired" : "not acquired: \(String(describing: error))")")
            Thread.sleep(forTimeInterval: 0.05)
        }
    }
}

@_cdecl("ba_extension_entry") public func entry() -> UnsafeRawPointer { baExtensionEntry(ExclusiveHandlers.self) }
