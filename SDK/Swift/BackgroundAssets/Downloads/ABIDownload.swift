import CBAExtension
import Vocabulary

/// Converts downloads to and from the C ABI's `ba_download_t` (the extension's runner, and the app's C library).
@_spi(Bindings) public enum ABIDownload {
    /// Calls `body` with a `ba_download_t` describing `download`, valid only during the call.
    public static func with<R>(_ download: BADownload, _ body: (UnsafePointer<ba_download_t>) -> R) -> R {
        Download(download).withABI(body)
    }

    /// The object an entry point receives: a `BAURLDownload`, or the manifest's private download class.
    public static func object(_ d: ba_download_t) -> BADownload { value(d).object }

    /// The download's fields as the host's value, `uniqueIdentifier` nil where the caller left it NULL.
    public static func value(_ d: ba_download_t) -> Download {
        func text(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        // The host checked the URL when the download was returned or scheduled; it is parsed only if asked for.
        let isURL = d.kind == Int32(BA_DOWNLOAD_KIND_URL.rawValue) && d.url != nil
        return Download(
            kind: isURL ? .url : .manifest, identifier: text(d.identifier) ?? "",
            uniqueIdentifier: text(d.unique_identifier), url: isURL ? text(d.url) : nil,
            applicationGroupIdentifier: text(d.application_group_identifier) ?? "", fileSize: d.file_size,
            priority: d.priority, state: d.state, isEssential: d.essential, sha256: isURL ? text(d.sha256) : nil,
            httpHeaders: isURL ? (0..<Int(d.http_header_count)).compactMap { text(d.http_headers[$0]) } : [])
    }
}
