import ExtensionRuntime
import Queue
import ServiceWire

extension ExtensionDownload {
    init(_ wire: WireDownload) {
        self.init(
            kind: wire.kind == 0 ? .url : .manifest, identifier: wire.identifier,
            uniqueIdentifier: wire.uniqueIdentifier, url: wire.url,
            applicationGroupIdentifier: wire.applicationGroupIdentifier, fileSize: wire.fileSize,
            priority: wire.priority, state: wire.state, isEssential: wire.isEssential, sha256: wire.sha256,
            httpHeaders: wire.httpHeaders)
    }
}

extension WireDownload {
    init(_ download: ExtensionDownload) {
        let download = download.withUniqueIdentifier()
        self.init(
            kind: download.kind.rawValue, identifier: download.identifier,
            uniqueIdentifier: download.uniqueIdentifier!, url: download.url,
            applicationGroupIdentifier: download.applicationGroupIdentifier, fileSize: download.fileSize,
            priority: download.priority, state: download.state, isEssential: download.isEssential,
            sha256: download.sha256, httpHeaders: download.httpHeaders)
    }

    init(_ queued: QueuedDownload) { self.init(queued.described) }
}

extension WireError {
    init(_ error: HostError) {
        self.init(code: error.code, domain: error.domain, message: error.message)
    }
}
