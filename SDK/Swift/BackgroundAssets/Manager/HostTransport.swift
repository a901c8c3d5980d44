import CBAExtension
import ServiceWire
import Vocabulary

/// How `BADownloadManager` reaches the host. Inside an extension window it is the C ABI's host table
/// (`ExtensionChannel`); in an app it is the service's socket (`ServiceTransport`). Errors are `NSError`s in Apple's domains.
protocol HostTransport: Sendable {
    /// True inside an extension, where some calls are not allowed (Apple's code 50).
    var isExtension: Bool { get }
    /// A download as its caller described it: `uniqueIdentifier` nil names the app's active download with its
    /// `identifier` (a download a binding's caller made and never fetched).
    func schedule(_ download: Download) throws
    func startForeground(_ download: Download) throws
    func cancel(_ download: Download) throws
    func currentDownloads() throws -> [BADownload]
    /// Blocks until the lock is held, or throws. `timeoutMilliseconds`: < 0 waits, 0 tries once.
    func acquireExclusiveControl(timeoutMilliseconds: Int64) throws
    func releaseExclusiveControl()
    /// The app set or cleared its delegate.
    func delegateChanged(isSet: Bool)
}

/// The extension's side: every call goes through the host table the runner gave the extension at init.
struct ExtensionChannel: HostTransport, @unchecked Sendable {  // safe: the table outlives every call; any thread
    let host: UnsafePointer<ba_host_t>

    var isExtension: Bool { true }

    private func call(_ body: (UnsafeMutablePointer<ba_error_t>) -> Bool) throws {
        var error = ba_error_t()
        error.struct_size = UInt32(MemoryLayout<ba_error_t>.size)
        guard body(&error) else { throw NSError(abi: error) }
    }

    func schedule(_ download: Download) throws {
        try call { error in download.withABI { host.pointee.schedule_download(host, $0, error) } }
    }

    func startForeground(_ download: Download) throws {
        try call { error in download.withABI { host.pointee.start_foreground_download(host, $0, error) } }
    }

    func cancel(_ download: Download) throws {
        try call { error in download.withABI { host.pointee.cancel_download(host, $0, error) } }
    }

    func currentDownloads() throws -> [BADownload] {
        final class Collected { var downloads: [BADownload] = [] }
        let collected = Collected()
        try call { error in
            host.pointee.fetch_current_downloads(
                host,
                { context, download in
                    guard let context, let download else { return }
                    Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue().downloads.append(
                        ABIDownload.object(download.pointee))
                }, Unmanaged.passUnretained(collected).toOpaque(), error)
        }
        return collected.downloads
    }

    func acquireExclusiveControl(timeoutMilliseconds: Int64) throws {
        try call { error in host.pointee.acquire_exclusive_control(host, timeoutMilliseconds, error) }
    }

    func releaseExclusiveControl() {
        host.pointee.release_exclusive_control(host)
    }

    /// An extension's callbacks come through its entry points, whatever its delegate.
    func delegateChanged(isSet: Bool) {}
}
