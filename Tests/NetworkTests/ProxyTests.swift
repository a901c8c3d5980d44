import Foundation
import Testing
import TestSupport

/// Proxies as Linux software reads them (docs/DOWNLOADS.md, "Proxies"), on a proxy-only network: the client
/// namespace reaches the server's only through tinyproxy (Debian's), as an office's or a school's network does.
@Suite(.ownThreads, .serialized, .enabled(if: NetworkLab.unavailable == nil, "\(NetworkLab.unavailable ?? "")"))
struct ProxyTests {
    static let user = "player"
    static let password = "s3cret-level"

    /// The lab made proxy-only, with its proxy (asking for credentials when `authenticated`).
    func proxyOnlyLab(authenticated: Bool = false) throws -> NetworkLab {
        let lab = try NetworkLab(rate: "4m")
        try lab.makeProxyOnly()
        try lab.startProxy(credentials: authenticated ? (Self.user, Self.password) : nil)
        return lab
    }

    func run(_ lab: NetworkLab, _ app: LabApp, _ environment: [String: String], _ extra: [String] = []) throws -> Bahost.Result {
        try #require(finish(try start(lab, app, ["--max-attempts", "1"] + extra, environment: environment), within: 60))
    }

    /// Without a proxy nothing reaches the server (its name does not resolve, no route leads there); through
    /// `https_proxy` the manifest and the download both arrive, each through a tunnel the proxy logged.
    @Test func aProxyOnlyNetworkDownloadsThroughHttpsProxy() throws {
        let lab = try proxyOnlyLab()
        defer { lab.close() }
        let alone = try run(lab, try LabApp(lab, size: 100_000), [:], ["--resource-timeout", "2"])
        #expect(alone.status != 0)
        #expect(alone.stdout.contains("-1003") || alone.stderr.contains("-1003"), "\(alone.stdout)\n\(alone.stderr)")

        let app = try LabApp(lab, size: 3 << 20)
        let result = try run(lab, app, ["https_proxy": "http://\(NetworkLab.proxyAddress)"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["level"])
        #expect(lab.requests(for: app.path).count == 1)
        let log = (try? String(contentsOfFile: lab.proxyLog, encoding: .utf8)) ?? ""
        #expect(log.contains("assets.lab.test:443"), "\(log)")
    }

    /// The proxy's credentials in its URL authenticate to it; wrong ones fail with URLSession's -1013 and a message
    /// naming the proxy, and the password is never printed.
    @Test func anAuthenticatedProxyTakesTheCredentialsInItsURLAndNeverPrintsThem() throws {
        let lab = try proxyOnlyLab(authenticated: true)
        defer { lab.close() }
        let app = try LabApp(lab, size: 1 << 20)
        let proxy = "http://\(Self.user):\(Self.password)@\(NetworkLab.proxyAddress)"
        let result = try run(lab, app, ["HTTPS_PROXY": proxy])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["level"])
        #expect(!result.stdout.contains(Self.password) && !result.stderr.contains(Self.password))

        let wrong = "not-the-\(Self.password)"
        let refused = try run(lab, try LabApp(lab, size: 1000), ["https_proxy": "http://\(Self.user):\(wrong)@\(NetworkLab.proxyAddress)"])
        #expect(refused.status != 0)
        let output = refused.stdout + refused.stderr
        #expect(output.contains("-1013"), "\(output)")
        #expect(output.contains("the proxy http://\(NetworkLab.proxyAddress) refused the credentials"), "\(output)")
        #expect(!output.contains(wrong) && !output.contains(Self.user + ":"), "\(output)")
    }

    /// With no proxy variable set, the desktop's settings decide, through libproxy: GNOME's proxy mode "auto" names
    /// a PAC file, which sends the CDN's requests through the proxy.
    @Test func aPACFileFromTheDesktopsSettingsIsFollowed() throws {
        let lab = try proxyOnlyLab()
        defer { lab.close() }
        try lab.serve(Data("""
            function FindProxyForURL(url, host) {
                if (host == "\(NetworkLab.host)") return "PROXY \(NetworkLab.proxyAddress)";
                return "DIRECT";
            }
            """.utf8), at: "proxy.pac")
        // GNOME's settings, from a key file rather than the user's dconf database.
        let config = lab.folder.appendingPathComponent("config")
        let settings = config.appendingPathComponent("glib-2.0/settings")
        try FileManager.default.createDirectory(at: settings, withIntermediateDirectories: true)
        try """
            [system/proxy]
            mode='auto'
            autoconfig-url='http://10.77.1.1/proxy.pac'
            """.write(to: settings.appendingPathComponent("keyfile"), atomically: true, encoding: .utf8)
        let app = try LabApp(lab, size: 1 << 20)
        let result = try run(lab, app, [
            "XDG_CURRENT_DESKTOP": "GNOME", "DESKTOP_SESSION": "gnome", "GSETTINGS_BACKEND": "keyfile",
            "XDG_CONFIG_HOME": config.path,
        ])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["level"])
        #expect(lab.requests(for: "proxy.pac").count >= 1)
        let log = (try? String(contentsOfFile: lab.proxyLog, encoding: .utf8)) ?? ""
        #expect(log.contains("assets.lab.test:443"), "\(log)")
    }
}
