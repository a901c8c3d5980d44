import AsyncHTTPClient
import Foundation
import HostVocabulary
import NIOHTTP1
import Vocabulary

extension TransferRequest {
    /// The HTTP request for one hop of an attempt: the download's own headers, identity encoding (the file is
    /// verified byte for byte), Basic credentials for their host only, and a range with `If-Range` when `offset`
    /// bytes are already on disk and a validator says what they are.
    ///
    /// Admission refuses a header the host keeps for itself (`RequestHeader.reservedNames`: `Host`, the framing,
    /// the range); one that reaches this far anyway (a row queued by an older release) is left out, never sent.
    /// `Authorization` and `Cookie` go to the download's own origin only, as URLSession does across redirects.
    ///
    /// Throws for a URL the HTTP client cannot request, before the client sees it: AsyncHTTPClient traps on a port
    /// beyond 65535 (an IP address's port is made a `UInt16`), and a URL is another party's text.
    func httpRequest(url: String, offset: Int64) throws -> HTTPClient.Request {
        let components = URLComponents.parsed(url)
        if let port = components?.port, !(1...65535).contains(port) {
            throw TransferError(
                .permanent, code: -1000, domain: TransferError.urlDomain,
                message: "the URL names port \(port); a port is 1 to 65535")  // NSURLErrorBadURL
        }
        var http = HTTPHeaders()
        http.add(name: "User-Agent", value: "bahost/\(BahostVersion.release)")
        http.add(name: "Accept-Encoding", value: "identity")
        // Parsed only for a download with headers of its own: most have none.
        lazy var sameOrigin = components.flatMap(Self.origin) == URLComponents(string: self.url).flatMap(Self.origin)
        for line in headers {
            guard case .success(let header) = RequestHeader.parse(line), sameOrigin || !header.isOriginBound else {
                continue
            }
            // An app may name its own User-Agent, as URLSession lets it.
            if header.name.lowercased() == "user-agent" {
                http.replaceOrAdd(name: header.name, value: header.value)
            } else {
                http.add(name: header.name, value: header.value)
            }
        }
        if let credential, components?.host == credential.host {
            let token = Data("\(credential.user):\(credential.password)".utf8).base64EncodedString()
            http.replaceOrAdd(name: "Authorization", value: "Basic \(token)")
        }
        if offset > 0, let ifRange = validator?.ifRange {
            http.add(name: "Range", value: "bytes=\(offset)-")
            http.add(name: "If-Range", value: ifRange)
        }
        return try HTTPClient.Request(url: url, method: .GET, headers: http)
    }

    /// Scheme, host and port, as a same-origin check compares them.
    static func origin(_ components: URLComponents) -> String? {
        guard let scheme = components.scheme?.lowercased(), let host = components.host?.lowercased() else { return nil }
        return "\(scheme)://\(host):\(components.port ?? (scheme == "http" ? 80 : 443))"
    }
}
