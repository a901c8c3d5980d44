import AsyncHTTPClient
import Foundation

extension TransferRequest {
    /// The HTTP request for one hop of an attempt: the download's own headers, identity encoding (the file is
    /// verified byte for byte), Basic credentials for their host only, and a range with `If-Range` when `offset`
    /// bytes are already on disk and a validator says what they are.
    func httpRequest(url: String, offset: Int64) -> HTTPClientRequest {
        var http = HTTPClientRequest(url: url)
        http.headers.add(name: "User-Agent", value: "bahost/0.1")
        http.headers.add(name: "Accept-Encoding", value: "identity")
        for header in headers {
            guard let colon = header.firstIndex(of: ":") else { continue }
            http.headers.add(
                name: String(header[..<colon]),
                value: header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        if let credential, URLComponents(string: url)?.host == credential.host {
            let token = Data("\(credential.user):\(credential.password)".utf8).base64EncodedString()
            http.headers.replaceOrAdd(name: "Authorization", value: "Basic \(token)")
        }
        if offset > 0, let ifRange = validator?.ifRange {
            http.headers.add(name: "Range", value: "bytes=\(offset)-")
            http.headers.add(name: "If-Range", value: ifRange)
        }
        return http
    }
}
