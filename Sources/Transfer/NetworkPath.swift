import CHostSupport
import Foundation

/// What the kernel says of the path to a server, now: the address it would send from, and whether any route leads
/// beyond the machine's own networks. Each answer is a route lookup (a UDP socket's connect), which sends nothing.
/// [any thread]
enum NetworkPath {
    /// The local address the kernel would send from to reach `peer` (a numeric address), or nil when no route leads
    /// there (the link is down, the network gone).
    static func source(toward peer: String) -> String? {
        var local = [CChar](repeating: 0, count: 64)
        guard bahost_route_source(peer, &local, local.count) == 0 else { return nil }
        return String(nulTerminated: local)
    }

    /// The local address the kernel would send from to reach `peer`, when the link it leaves by is up and has its
    /// carrier; nil when no route leads there or its link is down (its routes stay, but lead nowhere).
    static func usableSource(toward peer: String) -> String? {
        guard let local = source(toward: peer) else { return nil }
        return bahost_address_link_up(local) == 0 ? nil : local
    }

    /// Whether a route leads beyond the machine's own networks: to an address of the documentation ranges (RFC 5737,
    /// RFC 3849), which only a default route (or one as wide) reaches.
    static var hasRouteOut: Bool {
        source(toward: "192.0.2.1") != nil || source(toward: "2001:db8::1") != nil
    }
}

extension String {
    /// The text of a C buffer up to its first NUL (all of it when it has none), as UTF-8.
    init(nulTerminated buffer: [CChar]) {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self.init(decoding: bytes, as: UTF8.self)
    }
}
