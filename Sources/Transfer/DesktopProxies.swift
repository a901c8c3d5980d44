import CProxy
import Foundation
import HostVocabulary
import Synchronization
import Vocabulary

/// The desktop's proxy settings, asked through libproxy per URL: GNOME's and KDE's settings (manual, or a PAC file's
/// URL, which libproxy fetches and runs) when the environment names no proxy. libproxy may wait (a PAC file comes
/// over the network), so it is asked on the blocking pool, once per origin a minute: a small file's request on the
/// transfer thread finds its answer here without a wait. [any thread]
final class DesktopProxies: Sendable {
    private struct Factory: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// libproxy's factory, made at the first question (it starts the desktop's helper), and the lock that keeps its
    /// calls one at a time.
    private let factory = Mutex<Factory?>(nil)
    private let answers = Mutex<[String: (route: ProxyRoute, at: ContinuousClock.Instant)]>([:])
    static let answerLifetime = Duration.seconds(60)

    deinit {
        if let made = factory.withLock({ $0 }) { px_proxy_factory_free(made.pointer) }
    }

    /// The answer for `url`'s origin given less than `answerLifetime` ago, or nil.
    func known(_ url: String) -> ProxyRoute? {
        let origin = Self.origin(url)
        return answers.withLock { answers in
            guard let answer = answers[origin], ContinuousClock.now - answer.at < Self.answerLifetime else { return nil }
            return answer.route
        }
    }

    /// Asks libproxy for `url`'s route: the first proxy it lists that libcurl can use, `direct://` first meaning
    /// none. May wait (a PAC file fetched): never on the transfer thread.
    func ask(_ url: String) -> ProxyRoute {
        let route = factory.withLock { made -> ProxyRoute in
            if made == nil, let pointer = px_proxy_factory_new() { made = Factory(pointer: pointer) }
            guard let made, let list = px_proxy_factory_get_proxies(made.pointer, url) else { return .direct }
            defer { px_proxy_factory_free_proxies(list) }
            var index = 0
            while let entry = list[index] {
                index += 1
                let text = String(cString: entry)
                if text.hasPrefix("direct://") { return .direct }
                // libproxy says "socks://" for a SOCKS proxy of no stated version: libcurl's socks5.
                let named = text.hasPrefix("socks://") ? "socks5://" + text.dropFirst("socks://".count) : Substring(text)
                if let proxy = try? ProxyURL(parsing: String(named)) { return ProxyRoute(proxy: proxy, noProxy: nil) }
            }
            return .direct
        }
        answers.withLock { $0[Self.origin(url)] = (route, ContinuousClock.now) }
        return route
    }

    /// "https://cdn.example.com:443": what a PAC file's answer depends on in practice (its host and scheme).
    static func origin(_ url: String) -> String {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host
        else { return url }
        return "\(scheme)://\(host):\(components.port ?? (scheme == "http" ? 80 : 443))"
    }
}
