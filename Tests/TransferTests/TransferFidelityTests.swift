import CCurl
import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Transfer

/// What real apps rely on URLSession for: the headers that reach the server, the size a non-essential download only
/// estimates, the progress a download of unknown size reports, and each transport failure's NSURLError code.
@Suite(.ownThreads) struct TransferFidelityTests {
    static let faults = try! FaultServer()

    final class Progress: TransferObserver, Sendable {
        let reports = Mutex<[(received: Int64, expected: Int64)]>([])
        func began(validator: Validator, resumingAt offset: Int64) {}
        func progress(received: Int64, expected: Int64) { reports.withLock { $0.append((received, expected)) } }
    }

    func body(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13) }) }

    func partial() -> String { TestPlugins.scratch.appendingPathComponent("\(UUID().uuidString).part").path }

    /// One attempt, run as the host runs a transfer: its request, head and body on the transfer thread that reads
    /// it, what waits for the disk on the blocking pool.
    func perform(
        _ request: TransferRequest, observer: TransferObserver = Progress(), connectTimeout: Duration = .seconds(10)
    ) async throws -> Result<Int64, TransferError> {
        let client = try TransferClient(TransferConfiguration(connectTimeout: connectTimeout))
        let blocking = BlockingPool(threads: 2)
        let result = await client.perform(request, observer: observer, blocking: blocking) { $0 }
        await blocking.shutdown()
        try await client.shutdown()
        return result
    }

    func request(_ url: String, size: Int64 = 0, hint: Int64 = 0, headers: [String] = []) -> TransferRequest {
        TransferRequest(
            url: url, headers: headers, expectedSize: size, sizeHint: hint, partialPath: partial(), checkURL: { _ in nil })
    }

    /// A `Host` header in a row (one an older release queued) is never sent: the request names the URL's own host.
    @Test func aReservedHeaderNeverReachesTheServer() async throws {
        let name = "host-\(UUID().uuidString)"
        Self.faults.serve(body(100), at: name)
        let result = try await perform(request(
            Self.faults.url(name), headers: ["Host: other.example", "Transfer-Encoding: chunked", "X-Game: levels"]))
        #expect(try result.get() == 100)
        let sent = try #require(Self.faults.requests(for: name).first)
        #expect(sent.headers["host"] == "127.0.0.1:\(Self.faults.port)")
        #expect(sent.headers["transfer-encoding"] == nil)
        #expect(sent.headers["x-game"] == "levels")
    }

    /// Authorization and Cookie go to the download's origin, never across a redirect to another host.
    @Test func credentialsInHeadersStayWithTheirOrigin() async throws {
        let target = "target-\(UUID().uuidString)"
        Self.faults.serve(body(10), at: target)
        let hop = "hop-\(UUID().uuidString)"
        Self.faults.serve(Data(), at: hop, faults: [.redirect("http://localhost:\(Self.faults.port)/\(target)")])
        let result = try await perform(request(
            Self.faults.url(hop), headers: ["Authorization: Bearer token", "Cookie: a=b", "X-Game: levels"]))
        #expect(try result.get() == 10)
        let first = try #require(Self.faults.requests(for: hop).first)
        #expect(first.headers["authorization"] == "Bearer token" && first.headers["cookie"] == "a=b")
        let redirected = try #require(Self.faults.requests(for: target).first)
        #expect(redirected.headers["authorization"] == nil && redirected.headers["cookie"] == nil)
        #expect(redirected.headers["x-game"] == "levels")
    }

    /// A non-essential download's size is an estimate: the real file arrives whole, and progress counts against
    /// what the server says, not the estimate.
    @Test func aSizeThatIsOnlyAHintDoesNotFailTheDownload() async throws {
        let name = "hint-\(UUID().uuidString)"
        Self.faults.serve(body(5000), at: name)
        let progress = Progress()
        let result = try await perform(request(Self.faults.url(name), hint: 4000), observer: progress)
        #expect(try result.get() == 5000)
        #expect(progress.reports.withLock { $0.last.map { $0.expected } } == 5000)
        // The same estimate as a promise (an essential download) fails with the size mismatch, as before.
        let promised = try await perform(request(Self.faults.url(name), size: 4000))
        guard case .failure(let error) = promised else { Issue.record("a wrong promised size passed"); return }
        #expect(error.code == TransferError.sizeMismatch)
    }

    /// With no size declared, progress reports the size the response announces.
    @Test func progressWithoutADeclaredSizeUsesTheResponsesLength() async throws {
        let name = "unknown-\(UUID().uuidString)"
        Self.faults.serve(body(300_000), at: name, faults: [.trickle(chunk: 100_000, every: .milliseconds(150))])
        let progress = Progress()
        let result = try await perform(request(Self.faults.url(name)), observer: progress)
        #expect(try result.get() == 300_000)
        let reports = progress.reports.withLock { $0 }
        #expect(reports.count >= 2)
        #expect(reports.allSatisfy { $0.expected == 300_000 }, "\(reports)")
    }

    /// Each transport failure carries the code URLSession reports for it, in NSURLErrorDomain.
    @Test func transportFailuresCarryURLSessionsCodes() async throws {
        func failure(_ request: TransferRequest, connectTimeout: Duration = .seconds(10)) async throws -> TransferError? {
            guard case .failure(let error) = try await perform(request, connectTimeout: connectTimeout) else { return nil }
            return error
        }
        // A body cut short of its announced length, with no size declared: the connection was lost (-1005).
        let truncated = "truncated-\(UUID().uuidString)"
        Self.faults.serve(body(100_000), at: truncated, faults: [.truncate(afterBytes: 10_000)])
        let cut = try #require(try await failure(request(Self.faults.url(truncated))))
        #expect(cut.code == -1005 && cut.error.domain == "NSURLErrorDomain" && cut.kind == .transient, "\(cut)")
        // The same with a reset.
        let reset = "reset-\(UUID().uuidString)"
        Self.faults.serve(body(100_000), at: reset, faults: [.reset(afterBytes: 10_000)])
        let lost = try #require(try await failure(request(Self.faults.url(reset))))
        #expect(lost.code == -1005 && lost.error.domain == "NSURLErrorDomain", "\(lost)")
        // More redirects than the client follows: -1007.
        let loop = "loop-\(UUID().uuidString)"
        Self.faults.serve(Data(), at: loop, faults: Array(repeating: .redirect("/\(loop)"), count: 20))
        let redirects = try #require(try await failure(request(Self.faults.url(loop))))
        #expect(redirects.code == -1007 && redirects.error.domain == "NSURLErrorDomain", "\(redirects)")
        // A name that does not resolve: -1003.
        let unknown = try #require(try await failure(request("http://bahost-test.invalid/x"), connectTimeout: .seconds(2)))
        #expect(unknown.code == -1003 && unknown.kind == .network, "\(unknown)")
        // A port nobody listens on: -1004.
        let port = try Nginx.freePort()
        let refused = try #require(try await failure(request("http://127.0.0.1:\(port)/x"), connectTimeout: .seconds(1)))
        #expect(refused.code == -1004 && refused.kind == .network, "\(refused)")
    }

    /// A server that never ends its head is cut off at the transfer thread's limit (`HTTPExchange.maximumHeadBytes`;
    /// without one, every header it was sent would be kept until the server closed): the response is malformed
    /// (-1011).
    @Test func aHeadThatNeverEndsIsRefusedAtTheDecodersLimit() async throws {
        let flood = "flood-\(UUID().uuidString)"
        Self.faults.serve(body(100), at: flood, faults: [.headerFlood(bytes: 16 << 20)])
        guard case .failure(let error) = try await perform(request(Self.faults.url(flood))) else {
            Issue.record("a head of 16 MiB was accepted")
            return
        }
        #expect(error.code == -1011 && error.error.domain == "NSURLErrorDomain", "\(error)")
        #expect(error.error.message.contains("header"), "\(error)")
    }

    /// Every libcurl result bahost can meet, as URLSession reports the same failure: its NSURLError code, in
    /// NSURLErrorDomain, and what the engine does about it. The tests above provoke those a local server can.
    @Test func everyCurlFailureCarriesURLSessionsCode() {
        let expected: [(CURLcode, Int64, TransferError.Kind)] = [
            (CURLE_ABORTED_BY_CALLBACK, -999, .transient),  // NSURLErrorCancelled
            (CURLE_URL_MALFORMAT, -1000, .permanent),  // NSURLErrorBadURL
            (CURLE_UNSUPPORTED_PROTOCOL, -1002, .permanent),  // NSURLErrorUnsupportedURL
            (CURLE_COULDNT_RESOLVE_HOST, -1003, .network),  // NSURLErrorCannotFindHost
            (CURLE_COULDNT_RESOLVE_PROXY, -1003, .network),
            (CURLE_COULDNT_CONNECT, -1004, .network),  // NSURLErrorCannotConnectToHost
            (CURLE_PROXY, -1004, .network),
            (CURLE_OPERATION_TIMEDOUT, -1001, .transient),  // NSURLErrorTimedOut (connected: the server's silence)
            (CURLE_PARTIAL_FILE, -1005, .transient),  // NSURLErrorNetworkConnectionLost
            (CURLE_GOT_NOTHING, -1005, .transient),
            (CURLE_SEND_ERROR, -1005, .transient),
            (CURLE_RECV_ERROR, -1005, .transient),
            (CURLE_HTTP2, -1005, .transient),
            (CURLE_HTTP2_STREAM, -1005, .transient),
            (CURLE_SSL_SHUTDOWN_FAILED, -1005, .transient),
            (CURLE_TOO_MANY_REDIRECTS, -1007, .permanent),  // NSURLErrorHTTPTooManyRedirects
            (CURLE_WEIRD_SERVER_REPLY, -1011, .transient),  // NSURLErrorBadServerResponse
            (CURLE_RANGE_ERROR, -1011, .transient),
            (CURLE_HTTP_RETURNED_ERROR, -1011, .transient),
            (CURLE_BAD_CONTENT_ENCODING, -1015, .transient),  // NSURLErrorCannotDecodeRawData
            (CURLE_FILESIZE_EXCEEDED, -1103, .permanent),  // NSURLErrorDataLengthExceedsMaximum
            (CURLE_SSL_CONNECT_ERROR, -1200, .transient),  // NSURLErrorSecureConnectionFailed
            (CURLE_SSL_CIPHER, -1200, .transient),
            (CURLE_SSL_CACERT_BADFILE, -1200, .transient),
            (CURLE_SSL_CRL_BADFILE, -1200, .transient),
            (CURLE_USE_SSL_FAILED, -1200, .transient),
            (CURLE_SSL_ENGINE_NOTFOUND, -1200, .transient),
            (CURLE_SSL_ENGINE_SETFAILED, -1200, .transient),
            (CURLE_SSL_ENGINE_INITFAILED, -1200, .transient),
            (CURLE_PEER_FAILED_VERIFICATION, -1202, .permanent),  // NSURLErrorServerCertificateUntrusted
            (CURLE_SSL_ISSUER_ERROR, -1202, .permanent),
            (CURLE_SSL_PINNEDPUBKEYNOTMATCH, -1202, .permanent),
            (CURLE_SSL_INVALIDCERTSTATUS, -1202, .permanent),
            (CURLE_SSL_CLIENTCERT, -1205, .permanent),  // NSURLErrorClientCertificateRejected
            (CURLE_SSL_CERTPROBLEM, -1205, .permanent),
            (CURLE_OUT_OF_MEMORY, -1, .transient),  // NSURLErrorUnknown: the unforeseen
            (CURLE_UNRECOVERABLE_POLL, -1, .transient),
        ]
        for (code, nsURLError, kind) in expected {
            let failure = CurlFailure.of(code)
            #expect(failure.code == nsURLError && failure.kind == kind, "\(code.rawValue): \(failure)")
            #expect(failure.error.domain == "NSURLErrorDomain", "\(code.rawValue)")
        }
        // The system's error behind a failed connect, and whether the connection was made, refine the code.
        #expect(CurlFailure.of(CURLE_COULDNT_CONNECT, osErrno: ENETUNREACH).code == -1009)  // NotConnectedToInternet
        #expect(CurlFailure.of(CURLE_COULDNT_CONNECT, osErrno: ENETDOWN).code == -1009)
        #expect(CurlFailure.of(CURLE_COULDNT_CONNECT, osErrno: ECONNREFUSED).code == -1004)
        // A connection never answered while the routes say the path is gone.
        let connecting = CurlFailure.of(CURLE_OPERATION_TIMEDOUT, connection: .connecting(.gone))
        #expect(connecting.code == -1001 && connecting.kind == .network)
        // Offline (no path to the server: no attempt consumed) is the network's absence, never a server's answer.
        #expect(CurlFailure.of(CURLE_COULDNT_CONNECT, osErrno: ENETUNREACH).offline)
        #expect(CurlFailure.of(CURLE_COULDNT_CONNECT, osErrno: EHOSTUNREACH).offline)
        #expect(!CurlFailure.of(CURLE_COULDNT_CONNECT, osErrno: ECONNREFUSED).offline)
        #expect(connecting.offline && !CurlFailure.of(CURLE_OPERATION_TIMEDOUT, connection: .connected).offline)
        // An established TCP connection proves the path: a TLS handshake that times out is the server's failure,
        // transient, and so is a connection never answered on the path that last reached the server. Another path
        // than that one is the network's (docs/DOWNLOADS.md, "Offline").
        let handshake = CurlFailure.of(CURLE_OPERATION_TIMEDOUT, connection: .handshaking)
        #expect(handshake.code == -1001 && handshake.kind == .transient && !handshake.offline, "\(handshake)")
        #expect(handshake.message.contains("TLS handshake"), "\(handshake)")
        let silent = CurlFailure.of(CURLE_OPERATION_TIMEDOUT, connection: .connecting(.unchanged))
        #expect(silent.code == -1001 && !silent.offline, "\(silent)")
        #expect(CurlFailure.of(CURLE_OPERATION_TIMEDOUT, connection: .connecting(.changed)).offline)
        #expect(CurlFailure.of(CURLE_OPERATION_TIMEDOUT, connection: .connecting(.unknown), routeOut: false).offline)
        #expect(!CurlFailure.of(CURLE_OPERATION_TIMEDOUT, connection: .connecting(.unknown), routeOut: true).offline)
        #expect(CurlFailure.of(CURLE_COULDNT_RESOLVE_HOST, routeOut: false).offline)
        #expect(!CurlFailure.of(CURLE_COULDNT_RESOLVE_HOST, routeOut: true).offline)
        #expect(!CurlFailure.of(CURLE_RECV_ERROR).offline && !CurlFailure.of(CURLE_PEER_FAILED_VERIFICATION).offline)
        // libcurl's own words come along, made printable and bounded.
        let words = CurlFailure.of(CURLE_COULDNT_RESOLVE_HOST, detail: "Could not resolve host: cdn.example")
        #expect(words.message.hasSuffix("(Could not resolve host: cdn.example)"), "\(words)")
        let hostile = Array("bad\u{1B}[31m\(String(repeating: "x", count: 400))".utf8CString)
        let printable = hostile.withUnsafeBufferPointer { CurlFailure.printable($0.baseAddress!) }
        #expect(printable.utf8.count == 200 && printable.hasPrefix("bad?[31m"), "\(printable)")
    }
}
