/// An extension that decides which assets to download, and handles finished downloads while the app is not
/// running (Apple's `BADownloaderExtension`). Every requirement has a default, so implement only what you need.
///
/// To make the type loadable by bahost, export it with one line beside it:
/// ```swift
/// @_cdecl("ba_extension_entry") public func entry() -> UnsafeRawPointer { baExtensionEntry(MyExtension.self) }
/// ```
public protocol BADownloaderExtension {
    /// The host creates one instance per window.
    init()

    /// The downloads to schedule for `request`. `manifestURL` is a read-only file that is deleted when this
    /// returns. Scheduling with `BADownloadManager` is refused while this runs: return the downloads instead.
    func downloads(for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo)
        -> Set<BADownload>

    /// A server asked for credentials.
    func backgroundDownload(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)

    /// A download failed and no app delegate handled it. The app's manifest arrives here too, as a download that is
    /// not a `BAURLDownload`. May reschedule with `BADownloadManager` (essential ones via `removingEssential()`).
    func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error)

    /// A download finished and no app delegate handled it. Move the file before returning, or it is deleted.
    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL)

    /// The window's budget ran out: save state quickly. May run while another entry point is still running.
    ///
    /// Apple deprecated this in iOS 16.4 because it was not invoked in every case; bahost invokes it every time a
    /// window reaches its deadline, so here it is not deprecated.
    func extensionWillTerminate()
}

extension BADownloaderExtension {
    public func downloads(for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo)
        -> Set<BADownload>
    { [] }

    public func backgroundDownload(_ download: BADownload, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?)
    { (.performDefaultHandling, nil) }

    public func backgroundDownload(_ failedDownload: BADownload, failedWithError error: any Error) {}

    public func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {}

    public func extensionWillTerminate() {}

    /// Lets Apple's `@main struct MyExtension: BADownloaderExtension` compile unchanged. bahost loads the type
    /// through `ba_extension_entry`, so this only says so when someone runs the library as a program.
    public static func main() {
        print("\(Self.self) is a Background Assets extension: load it with `bahost run --plugin`.")
    }
}
