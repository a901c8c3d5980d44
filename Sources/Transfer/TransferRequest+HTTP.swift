import Foundation
import HostVocabulary
import Vocabulary

extension TransferRequest {
    /// The header lines of the request for one hop of an attempt: the download's own headers, identity encoding (the
    /// file is verified byte for byte), Basic credentials for their host only, and a range with `If-Range` when
    /// `offset` bytes are already on disk and a validator says what they are. libcurl adds `Host` from the URL.
    ///
    /// Admission refuses a header the host keeps for itself (`RequestHeader.reservedNames`: `Host`, the framing,
    /// the range); one that reaches this far anyway (a row queued by an older release) is left out, never sent.
    /// `Authorization` and `Cookie` go to the download's own origin only, as URLSession does across redirects.
    ///
    /// Throws for a URL whose port no TCP port can be, before libcurl sees it: a URL is another party's text, and
    /// the error then says what is wrong with it.
    func headerLines(url: String, offset: Int64) throws(TransferError) -> [String] {
        let components = URLComponents.parsed(url)
        if let port = components?.port, !(1...65535).contains(port) {
            throw TransferError(
                .permanent, code: -1000, domain: TransferError.urlDomain,
                message: "the URL names port \(port); a port is 1 to 65535")  // NSURLErrorBadURL
        }
        var lines = ["User-Agent: bahost/\(BahostVersion.release)", "Accept-Encoding: identity"]
        // Parsed only for a download with headers of its own: most have none.
        lazy var sameOrigin = components.flatMap(Self.origin) == URLComponents(string: self.url).flatMap(Self.origin)
        for line in headers {
            guard case .success(let header) = RequestHeader.parse(line), sameOrigin || !header.isOriginBound,
                !header.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 })
            else { continue }
            // libcurl reads `Name:` with nothing after it as "leave this header out"; `Name;` sends it empty.
            let field = header.value.isEmpty ? "\(header.name);" : "\(header.name): \(header.value)"
            // An app may name its own User-Agent, as URLSession lets it.
            if header.name.lowercased() == "user-agent" { lines[0] = field } else { lines.append(field) }
        }
        if let credential, components?.host == credential.host {
            let token = Data("\(credential.user):\(credential.password)".utf8).base64EncodedString()
            lines.removeAll { $0.lowercased().hasPrefix("authorization:") }
            lines.append("Authorization: Basic \(token)")
        }
        if offset > 0, let ifRange = validator?.ifRange {
            lines.append("Range: bytes=\(offset)-")
            lines.append("If-Range: \(ifRange)")
        }
        return lines
    }

    /// Scheme, host and port, as a same-origin check compares them.
    static func origin(_ components: URLComponents) -> String? {
        guard let scheme = components.scheme?.lowercased(), let host = components.host?.lowercased() else { return nil }
        return "\(scheme)://\(host):\(components.port ?? (scheme == "http" ? 80 : 443))"
    }
}
