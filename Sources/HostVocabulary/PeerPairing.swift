/// This machine's place in a household (`bahost peers pair`, docs/PEERS.md): the household's authority, and this
/// machine's certificate and key signed by it (PEM). "My own machines" shares through SSL swarms whose dictionary
/// holds the authority: only machines holding a certificate it signed are admitted, and a stranger's swarm of the
/// same file has another identity.
public struct PeerPairing: Sendable, Hashable {
    public var authority: String
    public var certificate: String
    public var key: String

    public init(authority: String, certificate: String, key: String) {
        self.authority = authority
        self.certificate = certificate
        self.key = key
    }
}
