import Foundation
import HostVocabulary
import Synchronization
import Vocabulary

/// Apple's `BADownloadDomainAllowList`: DNS names, where a leading `*.` matches any subdomain (not the name
/// itself). Hosts and patterns are compared in their IDNA ASCII form, lowercased, without a trailing dot, so case,
/// a trailing dot, Unicode and punycode spellings all compare as DNS does; only the URL's real host is compared,
/// so `https://allowed.example@evil.example` is evil.example, and `allowed.example.evil.example` is not
/// `allowed.example`.
public struct DomainAllowList: Sendable, Hashable {
    private let exact: Set<String>
    private let suffixes: [String]

    public init(_ patterns: [String]) {
        var exact = Set<String>()
        var suffixes: [String] = []
        for pattern in patterns {
            if pattern.hasPrefix("*.") {
                if let domain = Self.canonical(String(pattern.dropFirst(2))) { suffixes.append("." + domain) }
            } else if let domain = Self.canonical(pattern) {
                exact.insert(domain)
            }
        }
        self.exact = exact
        self.suffixes = suffixes
    }

    /// The list for `patterns`, parsed once while they stay among the last few parsed: an app's policy is made for
    /// every `scheduleDownload` and every transfer it starts, and parsing (URL components for each pattern) was a
    /// few microseconds of each call.
    public static func parsed(_ patterns: [String]) -> DomainAllowList {
        if let list = recentlyParsed.withLock({ $0[patterns] }) { return list }
        let list = DomainAllowList(patterns)
        recentlyParsed.withLock { lists in
            if lists.count >= 64 { lists.removeAll() }
            lists[patterns] = list
        }
        return list
    }

    private static let recentlyParsed = Mutex<[[String]: DomainAllowList]>([:])

    /// Whether `url`'s host is on the list.
    public func permits(_ url: String) -> Bool {
        guard let components = URLComponents.parsed(url), let host = components.encodedHost,
            let canonicalHost = Self.canonicalEncoded(host)
        else { return false }
        return exact.contains(canonicalHost) || suffixes.contains { canonicalHost.hasSuffix($0) }
    }

    /// A host as DNS compares it, or nil when it is not one.
    static func canonical(_ name: String) -> String? {
        guard !name.isEmpty, !name.contains("/"), !name.contains("@"),
            let host = URLComponents(string: "https://\(name)/")?.encodedHost
        else { return nil }
        return canonicalEncoded(host)
    }

    private static func canonicalEncoded(_ host: String) -> String? {
        var host = host.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        return host.isEmpty || host.hasSuffix(".") ? nil : host
    }
}
