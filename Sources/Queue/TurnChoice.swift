/// The transfer slots' limits: how many transfers may hold a slot at once, over all apps and to one host.
public struct SlotLimits: Sendable, Hashable {
    /// Transfers holding a slot at once, over all apps (foreground ones are not held back by it).
    public var total: Int
    /// Transfers holding a slot at once to one host.
    public var perHost: Int

    public init(total: Int, perHost: Int) {
        self.total = total
        self.perHost = perHost
    }
}

/// One turn's choice among the downloads the queue says may run, as a value the engine hands to `QueueStore.turn`:
/// foreground ones all start; background ones start while a slot, and a slot for their host, is free; what is left
/// goes to the reserve up to its limit; what is left then was turned away (another pass of the turn may find others
/// for the slots still free). The engine decides the numbers; the store reads the queue and applies them, in its
/// transaction, without calling back into the engine.
public struct TurnChoice: Sendable {
    public let limits: SlotLimits
    public let reserveLimit: Int
    /// Slots taken, per host too, counting what this choice started.
    public private(set) var count: Int
    public private(set) var hosts: [String: Int]
    public private(set) var reserve: [QueuedDownload]
    public private(set) var turnedAway = false

    /// - Parameters:
    ///   - taken: the slots taken now, over all hosts and per host.
    ///   - reserve: what earlier passes of the same turn reserved.
    public init(limits: SlotLimits, taken: Int, perHost: [String: Int], reserve: [QueuedDownload], reserveLimit: Int) {
        self.limits = limits
        self.reserveLimit = reserveLimit
        count = taken
        hosts = perHost
        self.reserve = reserve
    }

    /// The most background downloads this choice could take: the free slots and the reserve's room.
    public var backgroundLimit: Int { limits.total - count + (reserveLimit - reserve.count) }
    public var reserveFull: Bool { reserve.count >= reserveLimit }
    public var slotsFull: Bool { count >= limits.total }

    /// Chooses among `runnable`, in its order; returns what to start now.
    public mutating func choose(_ runnable: [QueuedDownload]) -> [QueuedDownload] {
        var chosen: [QueuedDownload] = []
        for download in runnable {
            if download.foreground || (count < limits.total && hosts[download.host, default: 0] < limits.perHost) {
                count += 1
                hosts[download.host, default: 0] += 1
                chosen.append(download)
            } else if reserve.count < reserveLimit {
                reserve.append(download)
            } else {
                turnedAway = true
            }
        }
        return chosen
    }
}
