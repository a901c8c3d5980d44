import Foundation
import HostVocabulary
import Synchronization

/// The hosts the machine has no path to, as a value: offline is a state, not a failure (docs/DOWNLOADS.md,
/// "Offline"). A transfer that finds no path (`TransferError.offline`) puts its host here; while the host waits, a
/// turn starts none of its downloads but its probe, one turn after `probeDelay`, which grows to at most 5 s: a network
/// that comes back unannounced (a router's uplink) is found within that. A change the kernel reports (a link, an
/// address, a route) makes every probe due at once, and a transfer that reaches the host lets its downloads go.
/// No clock, no queue: the engine's turn and the transfers' outcomes drive it (`NetworkWaitsTests`).
public struct NetworkWaits: Sendable {
    public struct Host: Sendable, Equatable {
        /// When a transfer first found no path to it.
        public var since: Date
        /// Probes that found no path in a row, the first failure included.
        public var failedProbes: Int
        /// When the next probe may start.
        public var nextProbe: Date
    }

    /// Whose downloads waiting for the network the next turn makes due at once.
    enum Wake: Sendable, Equatable {
        case hosts(Set<String>)
        case all
    }

    private(set) var hosts: [String: Host] = [:]
    private(set) var toWake: Wake?
    /// What the machine says of its network (NetworkManager, logind): downloads they hold wait in the queue, passed
    /// over by each turn (`QueueStore.runnable`), until they change.
    private(set) var conditions = NetworkConditions()

    /// The wait before the next probe after `failedProbes` failed in a row: soon after a first failure (the path may
    /// just have moved), then growing to 5 s.
    static func probeDelay(failedProbes: Int) -> Duration {
        let delays: [Duration] = [.milliseconds(250), .seconds(1), .seconds(2), .seconds(4), .seconds(5)]
        return delays[min(max(failedProbes - 1, 0), delays.count - 1)]
    }

    /// A transfer to `host` found no path at `now`; returns when its download is next due (the host's next probe).
    mutating func foundNoPath(_ host: String, now: Date) -> Date {
        if let waiting = hosts[host], waiting.nextProbe > now {
            // Another of its transfers failed with it: the probe already planned stands.
            return waiting.nextProbe
        }
        let failed = (hosts[host]?.failedProbes ?? 0) + 1
        let next = now.addingTimeInterval(Self.probeDelay(failedProbes: failed).inSeconds)
        hosts[host] = Host(since: hosts[host]?.since ?? now, failedProbes: failed, nextProbe: next)
        return next
    }

    /// A transfer reached `host` (whatever its answer): its downloads waiting for the network go at once.
    mutating func reached(_ host: String) {
        guard hosts.removeValue(forKey: host) != nil else { return }
        switch toWake {
        case .all: break
        case .hosts(let waking): toWake = .hosts(waking.union([host]))
        case nil: toWake = .hosts([host])
        }
    }

    /// The kernel reported a change to the network: every host is probed at once, and every download waiting for the
    /// network is due. A probe that fails after it starts the delays over (0.25 s first): the path may be coming back.
    mutating func networkChanged(now: Date) {
        for host in hosts.keys {
            hosts[host]?.nextProbe = now
            hosts[host]?.failedProbes = 0
        }
        toWake = .all
    }

    /// The machine's conditions changed: when they may hold less than before, every download waiting for the network
    /// is due at once (those still held are passed over by the turn).
    mutating func conditionsChanged(to new: NetworkConditions, now: Date) {
        let old = conditions
        conditions = new
        if new != old { networkChanged(now: now) }
    }

    /// The hosts whose downloads a turn at `now` must not start: those waiting whose probe is not due.
    func held(now: Date) -> Set<String> {
        Set(hosts.filter { $0.value.nextProbe > now }.keys)
    }

    /// Takes what the turn must wake, nil for nothing.
    mutating func takeToWake() -> Wake? {
        defer { toWake = nil }
        return toWake
    }
}

/// `NetworkWaits` under a lock: written by the transfers' outcomes (on the blocking pool) and the transfer threads'
/// news of the network, read by the engine's turns. [any thread]
final class NetworkWaitsDriver: Sendable {
    private let state = Mutex(NetworkWaits())

    func foundNoPath(_ host: String, now: Date = Date()) -> Date { state.withLock { $0.foundNoPath(host, now: now) } }
    func reached(_ host: String) { state.withLock { $0.reached(host) } }
    func networkChanged(now: Date = Date()) { state.withLock { $0.networkChanged(now: now) } }
    func held(now: Date = Date()) -> Set<String> { state.withLock { $0.held(now: now) } }
    func takeToWake() -> NetworkWaits.Wake? { state.withLock { $0.takeToWake() } }
    func conditionsChanged(to conditions: NetworkConditions, now: Date = Date()) {
        state.withLock { $0.conditionsChanged(to: conditions, now: now) }
    }
    /// Changes the conditions under the lock; returns them as changed.
    func updateConditions(_ change: (inout NetworkConditions) -> Void, now: Date = Date()) -> NetworkConditions {
        state.withLock { state in
            var conditions = state.conditions
            change(&conditions)
            state.conditionsChanged(to: conditions, now: now)
            return conditions
        }
    }
    var conditions: NetworkConditions { state.withLock { $0.conditions } }
    var isEmpty: Bool { state.withLock { $0.hosts.isEmpty } }
    var waitingHosts: [String: NetworkWaits.Host] { state.withLock { $0.hosts } }
}
