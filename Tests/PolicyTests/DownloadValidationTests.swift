import Foundation
@testable import Policy
import HostVocabulary
import Testing
import Vocabulary

@Suite struct DownloadValidationTests {
    let rules = DownloadRules(appGroupIdentifier: "group.g", allowInsecureLoopback: false)
    let loopbackRules = DownloadRules(appGroupIdentifier: "group.g", allowInsecureLoopback: true)

    func download(
        _ identifier: String = "a", url: String? = "https://assets.example.com/a", group: String = "group.g",
        size: Int64 = 100, essential: Bool = false, priority: Int64 = 50, sha256: String? = nil,
        headers: [String] = [], kind: Download.Kind = .url
    ) -> Download {
        Download(
            kind: kind, identifier: identifier, url: url, applicationGroupIdentifier: group, fileSize: size,
            priority: priority, isEssential: essential, sha256: sha256, httpHeaders: headers)
    }

    func code(_ d: Download, _ request: ContentRequest? = .install, rules: DownloadRules? = nil) -> Int64? {
        DownloadValidation.check(d, for: request, rules: rules ?? self.rules)?.code
    }

    @Test func aGoodDownloadPasses() {
        #expect(code(download()) == nil)
        #expect(code(download(essential: true), .update) == nil)
        #expect(code(download(sha256: String(repeating: "aB", count: 32), headers: ["Authorization: Bearer x"])) == nil)
    }

    @Test func onlyHTTPSExceptLoopbackBehindTheFlag() {
        #expect(code(download(url: "http://assets.example.com/a")) == 0)
        #expect(code(download(url: "ftp://assets.example.com/a")) == 0)
        #expect(code(download(url: "not a url")) == 0)
        #expect(code(download(url: nil)) == 0)
        #expect(code(download(url: "http://127.0.0.1:8080/a")) == 0)
        #expect(code(download(url: "http://127.0.0.1:8080/a"), rules: loopbackRules) == nil)
        #expect(code(download(url: "http://localhost/a"), rules: loopbackRules) == nil)
        #expect(code(download(url: "http://[::1]:80/a"), rules: loopbackRules) == nil)
        #expect(code(download(url: "http://127.0.0.1.evil.example/a"), rules: loopbackRules) == 0)
    }

    @Test func essentialOnlyForInstallAndUpdate() {
        #expect(code(download(essential: true), .periodic) == 109)
        #expect(code(download(essential: true), .languageChange) == 109)
        // Scheduled through the manager (no content request): never essential.
        #expect(code(download(essential: true), nil) == 109)
        #expect(code(download(size: 0, essential: true), .install) == 0)
    }

    @Test func sizesPrioritiesAndGroups() {
        #expect(code(download(size: -1)) == 0)
        #expect(code(download(size: 0)) == nil)
        #expect(code(download(priority: 101)) == 0)
        #expect(code(download(priority: -1)) == 0)
        #expect(code(download(group: "group.other")) == 0)
        #expect(code(download(sha256: "abc")) == 0)
        #expect(code(download(sha256: String(repeating: "g", count: 64))) == 0)
        #expect(code(download(headers: ["no colon"])) == 0)
        #expect(code(download(headers: ["X: a\r\nInjected: b"])) == 0)
        #expect(code(download(kind: .manifest)) == 0)
        #expect(code(download(""), .install) == 0)
    }

    /// Fields over their limits, or holding a control character that could forge a line of output, are refused
    /// naming the limit or the character.
    @Test func oversizedFieldsAndControlCharactersAreRefused() {
        func message(_ d: Download) -> String? { DownloadValidation.check(d, for: .install, rules: rules)?.message }
        var newline = download("level\n1")
        #expect(message(newline) == "the identifier holds the control character U+000A")
        newline = download("level-1")
        newline.url = "https://a.example.com/x\r\ny"
        #expect(message(newline)?.contains("control character U+000D") == true)
        #expect(message(download(String(repeating: "x", count: 1025))) == "the identifier is longer than 1024 bytes")
        var long = download("level-1")
        long.url = "https://a.example.com/" + String(repeating: "x", count: 8192)
        #expect(message(long) == "the URL is longer than 8192 bytes")
        #expect(code(download(String(repeating: "x", count: 1024))) == nil)
        #expect("a\nb\u{1b}[31m".printable() == "a\\u{a}b\\u{1b}[31m")
    }

    @Test func repeatedIdentifiersAreRefusedWith100() {
        let (accepted, rejected) = DownloadValidation.validate(
            [download("a"), download("b"), download("a"), download("c", url: "http://x.example.com")], for: .install,
            rules: rules)
        #expect(accepted.map(\.identifier) == ["a", "b"])
        #expect(rejected.map(\.download.identifier) == ["a", "c"])
        #expect(rejected.map(\.error.code) == [100, 0])
    }

    @Test func loopbackNames() {
        for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "127.255.0.10", "::1", "[::1]"] {
            #expect(DownloadValidation.isLoopback(host), "\(host)")
        }
        for host in [
            "127.0.0.1.evil.example", "1127.0.0.1", "128.0.0.1", "localhost.example", "127.0.0.256", "127.0.0",
            "127.0..1", "127.0.0.1.", ".127.0.0.1", "127.+1.0.1", "127.0.0.-1", "127.0.0.1 ", "0127.0.0.1", "127.0.0.01", "",
        ] {
            #expect(!DownloadValidation.isLoopback(host), "\(host)")
        }
    }

    /// A header that would change where or how the request goes (a virtual host the allow list never approved, the
    /// message's framing, the range the host resumes with) is refused naming it; the rest pass, Authorization among
    /// them (apps send bearer tokens to their CDN).
    @Test func reservedRequestHeadersAreRefusedNamingTheHeader() {
        func message(_ header: String) -> String? {
            DownloadValidation.check(download(headers: ["X-Ok: 1", header]), for: .install, rules: rules)?.message
        }
        for header in [
            "Host: other.example", "host: other.example", "HOST:x", "Content-Length: 5", "Transfer-Encoding: chunked",
            "Connection: close", "Proxy-Authorization: Basic x", "Range: bytes=0-", "If-Range: x",
            "Accept-Encoding: gzip", "Upgrade: h2c", "TE: trailers", "Expect: 100-continue", "Keep-Alive: 5",
        ] {
            let name = String(header[..<header.firstIndex(of: ":")!])
            #expect(message(header)?.hasPrefix("request header '\(name)' is reserved") == true, "\(header)")
        }
        #expect(message("Bad Name: x") == "request header name 'Bad Name' is not an HTTP token")
        #expect(message("X(1): x") == "request header name 'X(1)' is not an HTTP token")
        for header in ["Authorization: Bearer t", "User-Agent: game/1", "Cookie: a=b", "X-Api-Key: k", "If-None-Match: x"] {
            #expect(message(header) == nil, "\(header)")
        }
    }

    /// Credentials in a URL are refused (they belong to the challenge flow), and no message shows them.
    @Test func credentialsInAURLAreRefusedAndNeverPrinted() {
        for url in ["https://user:secret@assets.example.com/a", "https://user@assets.example.com/a",
                    "https://:secret@assets.example.com/a"] {
            let error = DownloadValidation.check(download(url: url), for: .install, rules: rules)
            #expect(error?.code == 0, "\(url)")
            #expect(error?.message.contains("holds credentials") == true, "\(url)")
            #expect(error?.message.contains("secret") == false, "\(url)")
        }
        // Refused on another ground, a URL is printed without its credentials all the same.
        let hostless = DownloadValidation.checkURL("https://user:secret@/a", rules: rules)
        #expect(hostless?.message == "'https:///a' is not an absolute URL")
        #expect("https://u:p@h.example:8/x?y=@z".printableURL() == "https://h.example:8/x?y=@z")
        #expect("https://h.example/p@q".printableURL() == "https://h.example/p@q")
        #expect("not a url u:p@x".printableURL() == "not a url u:p@x")
    }

    /// A port no TCP port can be is refused at admission and at every redirect hop (the HTTP client traps on one:
    /// found by the download-request fuzz target, kept in Fuzz/Findings).
    @Test func aURLWhosePortIsNoTCPPortIsRefused() {
        for url in ["https://203.0.113.5:70000/a", "https://assets.example.com:8078079/a", "https://[::1]:65536/a",
                    "https://assets.example.com:0/a"] {
            let error = DownloadValidation.check(download(url: url), for: .install, rules: rules)
            #expect(error?.code == 0, "\(url)")
            #expect(error?.message.contains("a port is 1 to 65535") == true, "\(url): \(String(describing: error))")
        }
        #expect(DownloadValidation.check(download(url: "https://assets.example.com:65535/a"), for: .install, rules: rules) == nil)
    }

    /// A URL is admitted as it will be fetched: encoded as Foundation's URL parsing encodes it, without a fragment,
    /// so that what is reported is what is requested.
    @Test func aURLIsNormalisedOnceAtAdmission() {
        let (accepted, _) = DownloadValidation.validate(
            [download("space", url: "https://assets.example.com/level 1.pack#part"),
             download("plain", url: "https://assets.example.com/a?b=1")],
            for: .install, rules: rules)
        #expect(accepted.map(\.url) == ["https://assets.example.com/level%201.pack", "https://assets.example.com/a?b=1"])
        #expect(DownloadValidation.normalizedURL("https://assets.example.com/é") == "https://assets.example.com/%C3%A9")
        #expect(DownloadValidation.normalizedURL("https://ex ample.com/") == nil)
        #expect(code(download(url: "https://ex ample.com/")) == 0)
    }
}
