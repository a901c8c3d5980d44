import Vocabulary

/// What the machine says of its network and of itself, and which downloads that holds back: a value, with no bus and
/// no clock (`NetworkConditionsTests`). NetworkManager's connectivity and metered state and logind's sleep come in
/// through the service's system-bus watch; without NetworkManager both stay unknown and hold nothing, and the kernel's
/// routes alone decide (`NetworkWaits`). docs/DOWNLOADS.md, "Metered networks" and "Sleep", says the rules.
public struct NetworkConditions: Sendable, Hashable {
    /// NetworkManager's NMConnectivityState.
    public enum Connectivity: UInt32, Sendable, Hashable {
        case unknown = 0
        case none = 1
        /// Behind a captive portal: the network answers, the internet does not yet.
        case portal = 2
        /// A network without a path to the internet.
        case limited = 3
        case full = 4
    }

    /// NetworkManager's NMMetered.
    public enum Metered: UInt32, Sendable, Hashable {
        case unknown = 0
        /// The user (or the connection's settings) said so.
        case yes = 1
        case no = 2
        /// NetworkManager guessed it from the device: mobile broadband, a phone's hotspot (its DHCP says so).
        case guessYes = 3
        case guessNo = 4
    }

    public var connectivity: Connectivity
    public var metered: Metered
    /// logind said the machine is about to sleep (`PrepareForSleep(true)`), and has not said it woke.
    public var asleep: Bool
    /// What the person's settings hold back now (a schedule, a game, the battery), for discretionary downloads
    /// whatever their host: the service decides it (`PersonRules`), the engine applies it.
    public var person: PersonHold?

    public init(
        connectivity: Connectivity = .unknown, metered: Metered = .unknown, asleep: Bool = false,
        person: PersonHold? = nil
    ) {
        self.connectivity = connectivity
        self.metered = metered
        self.asleep = asleep
        self.person = person
    }

    /// Apple's "expensive": any metered connection, whoever said so.
    public var isExpensive: Bool { metered == .yes || metered == .guessYes }
    /// Apple's "constrained" (Low Data Mode, a person's choice to save data): a connection the user marked metered,
    /// the nearest Linux has.
    public var isConstrained: Bool { metered == .yes }

    /// Why the conditions hold a download back, or nil when it may run.
    public enum Hold: Sendable, Hashable, CustomStringConvertible {
        case asleep
        case noConnectivity(Connectivity)
        /// Metered, and the download is discretionary (non-essential, not started in the foreground).
        case meteredBackground
        /// Metered, and the request does not allow expensive networks.
        case expensive
        /// Marked metered by the user, and the request does not allow constrained networks.
        case constrained
        /// The person's settings hold discretionary downloads now.
        case person(PersonHold)

        public var description: String {
            switch self {
            case .asleep: "the machine is going to sleep"
            case .noConnectivity(.portal): "NetworkManager reports a captive portal"
            case .noConnectivity(.limited): "NetworkManager reports limited connectivity"
            case .noConnectivity: "NetworkManager reports no connectivity"
            case .meteredBackground: "the network is metered, and background downloads wait for another"
            case .expensive: "the network is metered (the request does not allow expensive networks)"
            case .constrained: "the network is marked metered (the request does not allow constrained networks)"
            case .person(let hold): hold.description
            }
        }
    }

    /// What holds a download that uses the network so back now, or nil.
    public func hold(_ use: NetworkUse) -> Hold? {
        if asleep { return .asleep }
        // The person's holds are the machine's (a game, a battery), not the network's: a loopback server's too.
        if use.discretionary, let person { return .person(person) }
        if Self.isLoopback(use.host) { return nil }
        switch connectivity {
        case .none, .portal, .limited: return .noConnectivity(connectivity)
        case .unknown, .full: break
        }
        if isConstrained && use.access.contains(.avoidsConstrained) { return .constrained }
        if isExpensive && use.access.contains(.avoidsExpensive) { return .expensive }
        if isExpensive && use.discretionary { return .meteredBackground }
        return nil
    }

    /// Whether any download at all may be held now: when not, a turn need not judge each.
    public var holdsAny: Bool {
        asleep || person != nil || isExpensive || [.none, .portal, .limited].contains(connectivity)
    }

    /// A name or literal that stays on this machine.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host.hasSuffix(".localhost") || host.hasPrefix("127.") || host == "::1"
            || host == "[::1]"
    }
}

/// How a download uses the network, as `NetworkConditions.hold` judges it.
public struct NetworkUse: Sendable, Hashable {
    /// Non-essential and not started in the foreground: Apple's discretionary background work.
    public var discretionary: Bool
    public var access: NetworkAccess
    /// The download's host: a loopback one needs no network.
    public var host: String

    public init(discretionary: Bool, access: NetworkAccess, host: String) {
        self.discretionary = discretionary
        self.access = access
        self.host = host
    }
}
