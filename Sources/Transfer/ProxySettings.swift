import Foundation
import HostVocabulary
import Vocabulary

/// Which proxy one request goes through: none, or `proxy`; `noProxy` is the environment's list of hosts that go
/// direct, which libcurl matches (`CURLOPT_NOPROXY`, curl's own rules).
struct ProxyRoute: Sendable, Hashable {
    var proxy: ProxyURL?
    var noProxy: String?

    static let direct = ProxyRoute(proxy: nil, noProxy: nil)
}

/// The proxies the host's transfers follow, read as Linux software reads them: the environment's variables when
/// any is set (`https_proxy`, `http_proxy`, `all_proxy`, `no_proxy`, in both cases; lower case first, as curl),
/// else, in a desktop session, the desktop's settings through libproxy (`DesktopProxies`: GNOME's or KDE's, a PAC
/// file), asked per URL; else direct. Read once, when the host starts: a changed variable needs a restart, as for
/// curl's long-running users.
public struct ProxySettings: Sendable, Hashable {
    public enum Source: String, Sendable {
        /// The environment's variables.
        case environment
        /// The desktop's settings, through libproxy, per URL.
        case desktop
        /// No variable and no desktop session: direct. libproxy has no settings to read outside a desktop session,
        /// and its modules cost memory when loaded (docs/performance/DECISIONS.md #48).
        case direct
    }

    public let source: Source
    /// From the environment: the proxy for each of the request's schemes ("https", "http").
    let proxies: [String: ProxyURL]
    let noProxy: String?
    /// Variables that are set but cannot be used, each named with why (never with its value).
    public let problems: [String]

    /// Reads `environment`.
    public init(environment: [String: String]) {
        func value(_ names: String...) -> (String, String)? {
            for name in names { if let value = environment[name], !value.isEmpty { return (name, value) } }
            return nil
        }
        var proxies: [String: ProxyURL] = [:]
        var problems: [String] = []
        let fallback = value("all_proxy", "ALL_PROXY")
        for (scheme, names) in [("https", ["https_proxy", "HTTPS_PROXY"]), ("http", ["http_proxy", "HTTP_PROXY"])] {
            guard let (name, text) = value(names[0], names[1]) ?? fallback else { continue }
            do {
                proxies[scheme] = try ProxyURL(parsing: text)
            } catch {
                problems.append("\(name) is not used: \(error)")
            }
        }
        let anySet = ProxyURL.environmentNames.contains { !(environment[$0] ?? "").isEmpty }
        source = anySet ? .environment : Self.desktopSessionVariables.contains { !(environment[$0] ?? "").isEmpty }
            ? .desktop : .direct
        self.proxies = proxies
        noProxy = value("no_proxy", "NO_PROXY")?.1
        self.problems = problems
    }

    /// What a desktop session sets (GNOME, KDE and the others through `XDG_CURRENT_DESKTOP`, which they import into
    /// the systemd user manager's environment).
    static let desktopSessionVariables = ["XDG_CURRENT_DESKTOP", "DESKTOP_SESSION", "KDE_FULL_SESSION", "GNOME_DESKTOP_SESSION_ID"]

    /// The host process's environment.
    public static var fromProcess: ProxySettings { ProxySettings(environment: ProcessInfo.processInfo.environment) }

    /// The route for `url` when the environment decides it; nil when the desktop's settings must be asked.
    func environmentRoute(for url: String) -> ProxyRoute? {
        if source == .direct { return .direct }
        guard source == .environment else { return nil }
        let scheme = url.prefix(while: { $0 != ":" }).lowercased()
        return ProxyRoute(proxy: proxies[scheme], noProxy: noProxy)
    }

    /// What `bahost debug status` says of the proxies in force, credentials never included.
    public var summary: String {
        switch source {
        case .desktop:
            return "the desktop's settings (GNOME, KDE or a PAC file, through libproxy), per URL; none set means direct"
        case .direct:
            return "direct (no proxy variable is set, and no desktop session whose settings libproxy would read)"
        case .environment:
            var parts = ["https", "http"].map { scheme in "\(scheme) through \(proxies[scheme]?.redacted ?? "no proxy")" }
            if let noProxy { parts.append("not for \(noProxy.prefix(200))") }
            return "from the environment: " + parts.joined(separator: "; ")
        }
    }

    /// `summary` as JSON values.
    public var json: [String: Any] {
        var object: [String: Any] = ["source": source.rawValue, "problems": problems]
        for (scheme, proxy) in proxies {
            object[scheme] = ["proxy": proxy.address, "credentials": proxy.hasCredentials] as [String: Any]
        }
        if let noProxy { object["noProxy"] = String(noProxy.prefix(200)) }
        return object
    }
}
