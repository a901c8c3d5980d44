import CBAExtension
import Vocabulary

/// Converts downloads to and from the C ABI's `ba_download_t` (the extension's runner, and the app's C library).
@_spi(Bindings) public enum ABIDownload {
    /// Calls `body` with a `ba_download_t` describing `download`, valid only during the call.
    public static func with<R>(_ download: BADownload, _ body: (UnsafePointer<ba_download_t>) -> R) -> R {
        Download(download).withABI(body)
    }

    /// The object an entry point receives: a `BAURLDownload`, or the manifest's private download class.
    public static func object(_ d: ba_download_t) -> BADownload { Download(d).object }
}
