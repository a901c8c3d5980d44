import CBAExtension
import Vocabulary

/// Converts downloads to and from the C ABI's `ba_download_t` (the extension's runner, and the app's C library).
@_spi(Bindings) public enum ABIDownload {
    /// Calls `body` with a `ba_download_t` describing `download`, valid only during the call.
    public static func with<R>(_ download: BADownload, _ body: (UnsafePointer<ba_download_t>) -> R) -> R {
        Download(download).withABI(body)
    }

    /// The object an entry point receives: a `BAURLDownload`, or the manifest's private download class.
    public static func object(_ d: ba_download_t) -> BADownload {
        func text(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        let identifier = text(d.identifier) ?? ""
        let group = text(d.application_group_identifier) ?? ""
        let state = BADownload.State(rawValue: Int(d.state)) ?? .failed
        let priority = BADownload.Priority(Int(d.priority))
        // The host checked the URL when the download was returned or scheduled; it is parsed only if asked for.
        guard d.kind == Int32(BA_DOWNLOAD_KIND_URL.rawValue), let url = text(d.url) else {
            return BAManifestDownload(
                identifier: identifier, uniqueIdentifier: text(d.unique_identifier), state: state, priority: priority,
                isEssential: d.essential, applicationGroupIdentifier: group, fileSize: Int(d.file_size))
        }
        let headerLines = (0..<Int(d.http_header_count)).compactMap { text(d.http_headers[$0]) }
        return BAURLDownload(
            identifier: identifier, uniqueIdentifier: text(d.unique_identifier), state: state, url: url,
            headerLines: headerLines, essential: d.essential, fileSize: Int(d.file_size),
            applicationGroupIdentifier: group, priority: priority, sha256: text(d.sha256))
    }
}
