import Foundation
import Vocabulary

/// Converts downloads and errors to and from the service's socket messages.
extension Download {
    init(_ download: BADownload) {
        let urlDownload = download as? BAURLDownload
        self.init(
            kind: urlDownload == nil ? .manifest : .url, identifier: download.identifier,
            uniqueIdentifier: download.uniqueIdentifier, url: urlDownload?.urlString,
            applicationGroupIdentifier: download.applicationGroupIdentifier, fileSize: Int64(download.fileSize),
            priority: Int64(download.priority.rawValue), state: Int32(download.state.rawValue),
            isEssential: download.isEssential, sha256: urlDownload?.expectedSHA256,
            httpHeaders: urlDownload?.headerLines ?? [], networkAccess: urlDownload?.networkAccess ?? [])
    }

    /// The object a delegate receives: a `BAURLDownload`, or the manifest's private download class.
    var object: BADownload {
        let state = BADownload.State(rawValue: Int(state)) ?? .failed
        let priority = BADownload.Priority(Int(priority))
        // The host checked the URL when the download was scheduled; it is parsed only if the app asks for it.
        guard kind == .url, let url else {
            return BAManifestDownload(
                identifier: identifier, uniqueIdentifier: uniqueIdentifier, state: state, priority: priority,
                isEssential: isEssential, applicationGroupIdentifier: applicationGroupIdentifier,
                fileSize: Int(fileSize))
        }
        return BAURLDownload(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, state: state, url: url,
            headerLines: httpHeaders, networkAccess: networkAccess, essential: isEssential, fileSize: Int(fileSize),
            applicationGroupIdentifier: applicationGroupIdentifier, priority: priority, sha256: sha256)
    }
}

extension NSError {
    convenience init(wire error: HostError) {
        self.init(domain: error.domain, code: Int(error.code), userInfo: [NSLocalizedDescriptionKey: error.message])
    }
}
