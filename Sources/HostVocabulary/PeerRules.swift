/// What the person's settings and the machine's power say of sharing packs with peers now (`PersonRules` decides
/// it, the engine applies it; docs/PEERS.md).
public struct PeerRules: Sendable, Hashable {
    /// Who this machine shares packs with.
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// Nobody: nothing is announced, fetched from or sent to a peer.
        case off
        /// The machines paired with this one (`bahost peers pair`): an SSL swarm whose authority they share. Until
        /// this machine is paired, nobody.
        case own
        /// Any bahost on the network.
        case any
    }

    public var mode: Mode
    /// The most sent to peers together, bytes a second; nil for no limit.
    public var uploadRate: Int64?
    /// Why nothing is sent to peers now (the machine is on battery); nil when it may serve. Downloading from peers
    /// goes on.
    public var notServing: String?
    /// The household this machine is paired with, which "own" shares with; nil: not paired.
    public var pairing: PeerPairing?

    public init(mode: Mode, uploadRate: Int64?, notServing: String? = nil, pairing: PeerPairing? = nil) {
        self.mode = mode
        self.uploadRate = uploadRate
        self.notServing = notServing
        self.pairing = pairing
    }

    /// Whether these rules name anyone to share with: "own" needs this machine paired.
    public var sharesWithAnyone: Bool { mode == .any || (mode == .own && pairing != nil) }

    /// Nobody: what an engine follows until it is told otherwise.
    public static let off = PeerRules(mode: .off, uploadRate: nil)
}
