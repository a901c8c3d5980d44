import Vocabulary

#if canImport(FoundationNetworking)
/// Apple's `URLRequest.allowsExpensiveNetworkAccess` and `allowsConstrainedNetworkAccess`, which
/// swift-corelibs-foundation does not have, so that code written for Apple that sets them ports unchanged. A
/// `URLRequest` cannot grow stored properties, so a `false` is kept as a header of bahost's own
/// (`networkAccessHeader`), which this module reads into the download's network access when the download is
/// described to the service, and never sends. Apple's `allowsCellularAccess = false` reads as no expensive networks.
extension URLRequest {
    /// Whether the download may use a metered network (NetworkManager's `yes` or `guess-yes`). Default true.
    public var allowsExpensiveNetworkAccess: Bool {
        get { !networkAccess.contains(.avoidsExpensive) }
        set { setNetworkAccess(.avoidsExpensive, avoided: !newValue) }
    }

    /// Whether the download may use a network the user marked metered (Linux's nearest to Low Data Mode). Default
    /// true.
    public var allowsConstrainedNetworkAccess: Bool {
        get { !networkAccess.contains(.avoidsConstrained) }
        set { setNetworkAccess(.avoidsConstrained, avoided: !newValue) }
    }
}
#endif

extension URLRequest {
    /// The header that carries what the request avoids on Linux; bahost never sends it to a server.
    static let networkAccessHeader = "X-BAHost-Network-Access"

    /// The networks the request avoids.
    var networkAccess: NetworkAccess {
        var access = NetworkAccess(headerValue: value(forHTTPHeaderField: Self.networkAccessHeader) ?? "")
        if !allowsCellularAccess { access.insert(.avoidsExpensive) }
        return access
    }

    mutating func setNetworkAccess(_ bit: NetworkAccess, avoided: Bool) {
        var access = NetworkAccess(headerValue: value(forHTTPHeaderField: Self.networkAccessHeader) ?? "")
        if avoided { access.insert(bit) } else { access.remove(bit) }
        setValue(access.isEmpty ? nil : access.headerValue, forHTTPHeaderField: Self.networkAccessHeader)
    }
}

extension NetworkAccess {
    /// "avoids-expensive, avoids-constrained", as the header carries it.
    init(headerValue: String) {
        var access: NetworkAccess = []
        for token in headerValue.split(separator: ",") {
            switch token.trimmingCharacters(in: .whitespaces) {
            case "avoids-expensive": access.insert(.avoidsExpensive)
            case "avoids-constrained": access.insert(.avoidsConstrained)
            default: break
            }
        }
        self = access
    }

    var headerValue: String {
        [contains(.avoidsExpensive) ? "avoids-expensive" : nil, contains(.avoidsConstrained) ? "avoids-constrained" : nil]
            .compactMap { $0 }.joined(separator: ", ")
    }
}
