import Foundation

/// A proxy as Linux software names one (`https_proxy=http://user:secret@proxy.corp:3128`), its credentials kept
/// apart from what is ever printed: `redacted` names the scheme, host and port only, and says whether credentials
/// come with it. Only libcurl sees `url`.
public struct ProxyURL: Sendable, Hashable, CustomStringConvertible {
    /// The schemes libcurl speaks to a proxy; `socks5h` and `socks4a` let the proxy resolve the server's name.
    public static let schemes: Set<String> = ["http", "https", "socks4", "socks4a", "socks5", "socks5h"]

    /// The whole URL, credentials included: for libcurl alone.
    public let url: String
    public let scheme: String
    public let host: String
    public let port: Int
    public let hasCredentials: Bool
    /// The credentials' words, to scrub from any text that might echo them (libcurl's own messages do not).
    let secrets: [String]

    /// Parses `text` as curl does: a URL without a scheme is an http proxy; without a port, 1080 for SOCKS, 443 for
    /// https, 80 for http (curl's 1080 default is for a proxy that says nothing at all, which curl warns about).
    /// Throws with why, never with the text (it may hold credentials).
    public init(parsing text: String) throws(ProxyError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw .empty }
        let withScheme = trimmed.contains("://") ? trimmed : "http://\(trimmed)"
        guard let components = URLComponents(string: withScheme), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else { throw .malformed }
        guard Self.schemes.contains(scheme) else { throw .unsupportedScheme(scheme) }
        self.scheme = scheme
        self.host = host
        port = components.port ?? (scheme.hasPrefix("socks") ? 1080 : scheme == "https" ? 443 : 80)
        let user = components.user ?? ""
        let password = components.password ?? ""
        hasCredentials = !user.isEmpty || !password.isEmpty
        secrets = [components.percentEncodedUser, components.percentEncodedPassword, components.user, components.password]
            .compactMap { $0 }.filter { $0.count >= 2 }
        url = withScheme
    }

    /// "http://proxy.corp:3128": the proxy without its credentials.
    public var address: String {
        "\(scheme)://\(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host):\(port)"
    }

    /// `address`, and " (with credentials)" when it has them: what reports and errors print.
    public var redacted: String { address + (hasCredentials ? " (with credentials)" : "") }

    public var description: String { redacted }

    /// `text` with anything of the credentials in it replaced by `***`.
    public func scrubbed(_ text: String) -> String {
        secrets.reduce(text) { $0.replacingOccurrences(of: $1, with: "***") }
    }

    public enum ProxyError: Error, Sendable, Hashable, CustomStringConvertible {
        case empty
        case malformed
        case unsupportedScheme(String)

        public var description: String {
            switch self {
            case .empty: "it is empty"
            case .malformed: "it is not a URL with a host"
            case .unsupportedScheme(let scheme):
                "its scheme \(scheme.prefix(20)) is not one of \(ProxyURL.schemes.sorted().joined(separator: ", "))"
            }
        }
    }

    /// The environment's proxy variables, in both cases, as curl, apt, pip and git read them.
    public static let environmentNames = [
        "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY",
    ]

    /// `environment` with the credentials taken out of every proxy variable: what a process the host does not trust
    /// (an extension's window) may inherit. A value that cannot be parsed is dropped whole.
    public static func withoutCredentials(_ environment: [String: String]) -> [String: String] {
        var result = environment
        for name in environmentNames {
            guard let value = environment[name], !value.isEmpty else { continue }
            guard let proxy = try? ProxyURL(parsing: value) else {
                result[name] = nil
                continue
            }
            if proxy.hasCredentials { result[name] = proxy.address }
        }
        return result
    }
}
