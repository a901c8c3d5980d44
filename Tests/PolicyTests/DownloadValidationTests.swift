@testable import Policy
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
        for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]"] {
            #expect(DownloadValidation.isLoopback(host), "\(host)")
        }
        for host in ["127.0.0.1.evil.example", "1127.0.0.1", "128.0.0.1", "localhost.example", "127.0.0.256"] {
            #expect(!DownloadValidation.isLoopback(host), "\(host)")
        }
    }
}
