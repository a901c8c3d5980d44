import CCurl
import Glibc
import HostVocabulary
import Vocabulary

/// How far a request's connection got before it failed: what a timeout means depends on it.
enum ConnectionProgress: Sendable, Equatable {
    /// No TCP connection was made; what the routes say of the way to the server.
    case connecting(PathToServer)
    /// The server accepted the TCP connection (the path works); the TLS handshake had not finished.
    case handshaking
    /// The connection is made, TLS included.
    case connected
}

/// What the kernel's routes say of the way to a server after a connection to it was never answered.
enum PathToServer: Sendable, Equatable {
    /// The same as when the server was last reached (or it never was): the silence is the server's, or the path's
    /// beyond this machine's sight.
    case unchanged
    /// No route leads there now.
    case gone
    /// The kernel now sends from another address than the one that last reached the server (a link gone, a VPN or
    /// a second interface's route moved to the default route).
    case changed
    /// The server's address was not known yet (its name was still being resolved).
    case unknown
}

/// What libcurl's result for a request means to the engine: the `NSURLErrorDomain` code URLSession reports for the
/// same failure (so that an extension's checks work unchanged), and whether to retry (`transient`), wait for the
/// network (`network`) or give up (`permanent`). Pure, so that every code is tested without a server
/// (`CurlFailureTests`); the tests against the fault server provoke the ones a server can.
enum CurlFailure {
    /// NSURLError codes (Apple's NSURLError.h).
    static let unknown: Int64 = -1
    static let cancelled: Int64 = -999
    static let badURL: Int64 = -1000
    static let timedOut: Int64 = -1001
    static let unsupportedURL: Int64 = -1002
    static let cannotFindHost: Int64 = -1003
    static let cannotConnectToHost: Int64 = -1004
    static let networkConnectionLost: Int64 = -1005
    static let badServerResponse: Int64 = -1011
    static let userAuthenticationRequired: Int64 = -1013
    static let cannotDecodeRawData: Int64 = -1015
    static let notConnectedToInternet: Int64 = -1009
    static let dataLengthExceedsMaximum: Int64 = -1103
    static let secureConnectionFailed: Int64 = -1200
    static let serverCertificateUntrusted: Int64 = -1202
    static let clientCertificateRejected: Int64 = -1205

    /// The failure for `code`.
    /// - Parameters:
    ///   - osErrno: the system's error behind it (`CURLINFO_OS_ERRNO`), 0 when none.
    ///   - connection: how far the connection got (a timeout before it is made may be the network's; once the server
    ///     has accepted it, the server's).
    ///   - detail: libcurl's own words (its error buffer), already made printable; added to the message.
    ///   - routeOut: whether the machine has a route beyond its own networks (a name that cannot be resolved without
    ///     one is the network's absence, with one the name's or its server's).
    ///   - proxy: the proxy the request went through, if any; `connectStatus` its answer to `CONNECT` (0: none).
    static func of(
        _ code: CURLcode, osErrno: Int32 = 0, connection: ConnectionProgress = .connected, detail: String = "",
        routeOut: Bool = true, proxy: ProxyURL? = nil, connectStatus: Int = 0
    ) -> TransferError {
        let failure = direct(code, osErrno: osErrno, connection: connection, detail: detail, routeOut: routeOut)
        guard let proxy else { return failure }
        return throughProxy(failure, code, proxy: proxy, connectStatus: connectStatus, detail: detail)
    }

    /// A failure of a request through `proxy`, named for the proxy (never with its credentials) where it was the
    /// proxy's: its refusal of the tunnel (407 asks for credentials: -1013, as URLSession's
    /// `NSURLErrorUserAuthenticationRequired`), or a connection to it that failed.
    static func throughProxy(
        _ failure: TransferError, _ code: CURLcode, proxy: ProxyURL, connectStatus: Int, detail: String
    ) -> TransferError {
        func named(_ kind: TransferError.Kind, _ code: Int64, _ message: String) -> TransferError {
            TransferError(
                kind, code: code, domain: TransferError.urlDomain, message: detail.isEmpty ? message : "\(message) (\(detail))")
        }
        // 407 is the standard's answer; some proxies (tinyproxy) answer a refused CONNECT's credentials with 401.
        if connectStatus == 407 || connectStatus == 401 {
            return named(
                .transient, userAuthenticationRequired,
                proxy.hasCredentials
                    ? "the proxy \(proxy.address) refused the credentials in its URL (\(connectStatus))"
                    : "the proxy \(proxy.address) asks for credentials (\(connectStatus)): give them in its URL")
        }
        if connectStatus >= 300 {
            return named(.transient, cannotConnectToHost, "the proxy \(proxy.address) refused the tunnel to the server (\(connectStatus))")
        }
        var renamed = failure
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_PROXY:
            renamed.error.message = "cannot connect to the proxy \(proxy.address): " + failure.message
        case CURLE_COULDNT_RESOLVE_PROXY:
            renamed.error.message = "the proxy \(proxy.address): " + failure.message
        default:
            break
        }
        return renamed
    }

    /// The failure of a request, whichever way it went.
    private static func direct(
        _ code: CURLcode, osErrno: Int32, connection: ConnectionProgress, detail: String, routeOut: Bool
    ) -> TransferError {
        func url(_ kind: TransferError.Kind, _ code: Int64, _ message: String, offline: Bool = false) -> TransferError {
            TransferError(
                kind, code: code, domain: TransferError.urlDomain, message: detail.isEmpty ? message : "\(message) (\(detail))",
                offline: offline)
        }
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL:
            return url(.permanent, unsupportedURL, "the URL's scheme is not http or https")
        case CURLE_URL_MALFORMAT:
            return url(.permanent, badURL, "the URL is not one the client can request")
        case CURLE_COULDNT_RESOLVE_HOST:
            return url(.network, cannotFindHost, "the server's name cannot be resolved", offline: !routeOut)
        case CURLE_COULDNT_RESOLVE_PROXY:
            return url(.network, cannotFindHost, "the proxy's name cannot be resolved", offline: !routeOut)
        case CURLE_COULDNT_CONNECT:
            if osErrno == ENETUNREACH || osErrno == ENETDOWN {
                return url(.network, notConnectedToInternet, "the network is unreachable", offline: true)
            }
            // A refusal is the server's answer (the network works); no route to the host is the network's absence.
            return url(.network, cannotConnectToHost, "cannot connect to the server", offline: osErrno == EHOSTUNREACH)
        case CURLE_OPERATION_TIMEDOUT:
            // An established TCP connection proves the path: what times out after it is the server's. Before it, the
            // network is absent only when the routes say so (docs/DOWNLOADS.md, "Offline").
            switch connection {
            case .connected:
                return url(.transient, timedOut, "the server stopped sending")
            case .handshaking:
                return url(
                    .transient, timedOut, "the server accepted the connection but did not complete the TLS handshake")
            case .connecting(.gone):
                return url(
                    .network, timedOut, "the connection timed out: no route leads to the server now", offline: true)
            case .connecting(.changed):
                return url(
                    .network, timedOut,
                    "the connection timed out on another path than the one that last reached the server", offline: true)
            case .connecting(.unchanged), .connecting(.unknown):
                return url(.network, timedOut, "the server did not answer the connection", offline: !routeOut)
            }
        case CURLE_TOO_MANY_REDIRECTS:
            return url(.permanent, TransferError.tooManyRedirects, "too many redirects")
        case CURLE_WEIRD_SERVER_REPLY, CURLE_RANGE_ERROR, CURLE_HTTP_RETURNED_ERROR:
            return url(.transient, badServerResponse, "the server's response is malformed")
        case CURLE_FILESIZE_EXCEEDED:
            return url(.permanent, dataLengthExceedsMaximum, "the file is larger than the most allowed")
        case CURLE_BAD_CONTENT_ENCODING:
            return url(.transient, cannotDecodeRawData, "the server's content encoding cannot be decoded")
        case CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_HTTP2,
            CURLE_HTTP2_STREAM, CURLE_SSL_SHUTDOWN_FAILED:
            return url(.transient, networkConnectionLost, "the connection was lost before the response ended")
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS:
            return url(.permanent, serverCertificateUntrusted, "the server's certificate is not trusted")
        case CURLE_SSL_CLIENTCERT, CURLE_SSL_CERTPROBLEM:
            return url(.permanent, clientCertificateRejected, "the client certificate was rejected")
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CRL_BADFILE, CURLE_USE_SSL_FAILED, CURLE_SSL_ENGINE_INITFAILED:
            return url(.transient, secureConnectionFailed, "the TLS connection failed")
        case CURLE_ABORTED_BY_CALLBACK:
            return url(.transient, cancelled, "the transfer was cancelled")
        case CURLE_PROXY:
            return url(.network, cannotConnectToHost, "the proxy refused or failed the connection")
        default:
            // What URLSession reports for the unforeseen (out of memory, an unrecoverable poll, a write the host
            // itself refused without saying why).
            return url(.transient, unknown, "the transfer failed: \(String(cString: curl_easy_strerror(code)))")
        }
    }

    /// libcurl's error buffer as a message may carry it: printable ASCII, at most 200 characters. It names hosts and
    /// ports, never a URL's credentials, but it is another party's text in part (a server's words).
    static func printable(_ buffer: UnsafePointer<CChar>) -> String {
        var text = ""
        var pointer = buffer
        while pointer.pointee != 0 && text.utf8.count < 200 {
            let byte = UInt8(bitPattern: pointer.pointee)
            text.append((0x20...0x7E).contains(byte) ? Character(Unicode.Scalar(byte)) : "?")
            pointer += 1
        }
        while text.last == " " { text.removeLast() }
        return text
    }
}
