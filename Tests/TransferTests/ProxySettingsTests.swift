import CCurl
import Foundation
import HostVocabulary
import Testing
@testable import Transfer
import Vocabulary

/// The proxy settings as values: how the environment is read, and that credentials never leave `url`.
@Suite struct ProxySettingsTests {
    @Test func aProxyURLIsReadAsCurlReadsItAndPrintedWithoutItsCredentials() throws {
        let proxy = try ProxyURL(parsing: "http://player:s%40cret@proxy.corp:3128")
        #expect(proxy.scheme == "http" && proxy.host == "proxy.corp" && proxy.port == 3128 && proxy.hasCredentials)
        #expect(proxy.redacted == "http://proxy.corp:3128 (with credentials)")
        #expect(!proxy.description.contains("s%40cret") && !proxy.description.contains("player"))
        #expect(proxy.scrubbed("auth for player with s@cret failed") == "auth for *** with *** failed")
        // No scheme: http, as curl; SOCKS defaults to 1080; names resolved by the proxy with socks5h.
        #expect(try ProxyURL(parsing: "proxy.corp:8080").address == "http://proxy.corp:8080")
        #expect(try ProxyURL(parsing: "socks5h://gateway").address == "socks5h://gateway:1080")
        #expect(try ProxyURL(parsing: "http://[fd00::1]:3128").address == "http://[fd00::1]:3128")
        #expect(throws: ProxyURL.ProxyError.unsupportedScheme("ftp")) { try ProxyURL(parsing: "ftp://proxy.corp") }
        #expect(throws: ProxyURL.ProxyError.empty) { try ProxyURL(parsing: "  ") }
    }

    @Test func theEnvironmentIsReadInBothCasesLowerCaseFirstWithAllProxyAsTheFallback() throws {
        let settings = ProxySettings(environment: [
            "HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:2", "ALL_PROXY": "socks5h://all:3",
            "NO_PROXY": "localhost,.internal",
        ])
        #expect(settings.source == .environment)
        #expect(settings.environmentRoute(for: "https://cdn.example.com/x")?.proxy?.address == "http://lower:2")
        #expect(settings.environmentRoute(for: "http://cdn.example.com/x")?.proxy?.address == "socks5h://all:3")
        #expect(settings.environmentRoute(for: "https://cdn.example.com/x")?.noProxy == "localhost,.internal")
        #expect(ProxySettings(environment: ["HTTP_PROXY": "http://upper:1"]).environmentRoute(for: "http://a/")?.proxy?.host == "upper")
    }

    @Test func withNoVariableTheDesktopDecidesAndAnUnusableOneIsNamedWithoutItsValue() {
        // In a desktop session: libproxy asks the desktop. Outside one (a server, CI): direct, libproxy never loaded.
        let none = ProxySettings(environment: ["no_proxy": "localhost", "XDG_CURRENT_DESKTOP": "GNOME"])
        #expect(none.source == .desktop && none.environmentRoute(for: "https://a/") == nil)
        let headless = ProxySettings(environment: ["no_proxy": "localhost"])
        #expect(headless.source == .direct && headless.environmentRoute(for: "https://a/") == .direct)
        let broken = ProxySettings(environment: ["https_proxy": "ftp://player:hunter2@proxy"])
        #expect(broken.source == .environment)
        #expect(broken.problems == ["https_proxy is not used: its scheme ftp is not one of http, https, socks4, socks4a, socks5, socks5h"])
        #expect(broken.environmentRoute(for: "https://a/") == ProxyRoute(proxy: nil, noProxy: nil))
        #expect(!broken.summary.contains("hunter2"))
    }

    @Test func anExtensionInheritsTheProxiesWithoutTheirCredentials() {
        let environment = ProxyURL.withoutCredentials([
            "https_proxy": "http://player:hunter2@proxy.corp:3128", "ALL_PROXY": "not a url at all://",
            "http_proxy": "http://proxy.corp:3128", "HOME": "/home/player",
        ])
        #expect(environment["https_proxy"] == "http://proxy.corp:3128")
        #expect(environment["http_proxy"] == "http://proxy.corp:3128")
        #expect(environment["ALL_PROXY"] == nil)
        #expect(environment["HOME"] == "/home/player")
    }

    @Test func aProxysRefusalIsNamedForItWithURLSessionsCodes() throws {
        let proxy = try ProxyURL(parsing: "http://player:hunter2@10.0.0.1:8888")
        let refused = CurlFailure.of(CURLE_PROXY, proxy: proxy, connectStatus: 407)
        #expect(refused.code == -1013 && refused.message.hasPrefix("the proxy http://10.0.0.1:8888 refused the credentials"))
        let unreachable = CurlFailure.of(CURLE_COULDNT_CONNECT, osErrno: ECONNREFUSED, proxy: proxy)
        #expect(unreachable.code == -1004 && unreachable.message.hasPrefix("cannot connect to the proxy http://10.0.0.1:8888"))
        #expect(!refused.message.contains("hunter2") && !unreachable.message.contains("hunter2"))
        let tunnel = CurlFailure.of(CURLE_PROXY, proxy: proxy, connectStatus: 502)
        #expect(tunnel.code == -1004 && tunnel.kind == .transient, "\(tunnel)")
    }
}
