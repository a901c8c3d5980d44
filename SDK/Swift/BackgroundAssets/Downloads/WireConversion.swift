import ServiceWire

/// Converts downloads and errors to and from the service's socket messages.
extension WireDownload {
    init(_ download: BADownload) {
        let urlDownload = download as? BAURLDownload
        self.init(
            kind: urlDownload == nil ? 1 : 0, identifier: download.identifier,
            uniqueIdentifier: download.uniqueIdentifier, url: urlDownload?.request.url?.absoluteString,
            applicationGroupIdentifier: download.applicationGroupIdentifier, fileSize: Int64(download.fileSize),
            priority: Int64(download.priority.rawValue), state: Int32(download.state.rawValue),
            isEssential: download.isEssential, sha256: urlDownload?.expectedSHA256,
            httpHeaders: (urlDownload?.request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }
                .map { "\($0.key): \($0.value)" })
    }

    /// The object a delegate receives: a `BAURLDownload`, or the manifest's private download class.
    var object: BADownload {
        let state = BADownload.State(rawValue: Int(state)) ?? .failed
        let priority = BADownload.Priority(Int(priority))
        guard kind == 0, let url = url.flatMap(URL.init(string:)) else {
            return BAManifestDownload(
                identifier: identifier, uniqueIdentifier: uniqueIdentifier, state: state, priority: priority,
                isEssential: isEssential, applicationGroupIdentifier: applicationGroupIdentifier,
                fileSize: Int(fileSize))
        }
        var request = URLRequest(url: url)
        for header in httpHeaders {
            guard let colon = header.firstIndex(of: ":") else { continue }
            request.setValue(
                header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces),
                forHTTPHeaderField: String(header[..<colon]))
        }
        return BAURLDownload(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, state: state, request: request,
            essential: isEssential, fileSize: Int(fileSize), applicationGroupIdentifier: applicationGroupIdentifier,
            priority: priority, sha256: sha256)
    }
}

extension NSError {
    convenience init(wire error: WireError) {
        self.init(domain: error.domain, code: Int(error.code), userInfo: [NSLocalizedDescriptionKey: error.message])
    }
}
