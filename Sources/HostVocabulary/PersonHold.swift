import Foundation

/// Why the person's settings hold non-essential background downloads back now (docs/DOWNLOADS.md, "What the person
/// decides"); `NetworkConditions.hold` reports it as `.person`. Essential downloads and those started in the
/// foreground are never held so: the person is waiting for them.
public enum PersonHold: Sendable, Hashable, CustomStringConvertible {
    /// Outside `schedule.hours`; `opens` is when they open next.
    case schedule(hours: String, opens: Date)
    /// A game runs: GameMode reports clients, or an app bahost launched says it is playing.
    case game(String)
    /// On battery at `percent` (nil: unknown), below the settings' `power.battery-below`.
    case battery(percent: Int?, below: Int)
    /// The power profile is power-saver.
    case powerSaver

    public var description: String {
        switch self {
        case .schedule(let hours, let opens):
            "outside the download hours \(hours) (schedule.hours); they open at \(Self.time(opens))"
        case .game(let who): "a game is running (\(who)); game.while-playing is wait"
        case .battery(let percent, let below):
            "on battery" + (percent.map { " at \($0) %" } ?? "") + ", below \(below) % (power.battery-below); "
                + "until the charger is plugged in"
        case .powerSaver: "the power profile is power-saver (power.power-saver is wait)"
        }
    }

    /// What lifts it, in a few words (`bahost debug status`).
    public var until: String {
        switch self {
        case .schedule(_, let opens): "until \(Self.time(opens))"
        case .game: "until the game ends"
        case .battery: "until the charger is plugged in"
        case .powerSaver: "until the power profile is not power-saver"
        }
    }

    private static func time(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        return formatter.string(from: date)
    }
}

/// What the machine's power says: UPower's `OnBattery` and its display device's `Percentage`, and
/// power-profiles-daemon's `ActiveProfile`. Unknown (nil) holds nothing.
public struct PowerState: Sendable, Hashable {
    public var onBattery: Bool?
    public var batteryPercent: Double?
    public var powerSaver: Bool?

    public init(onBattery: Bool? = nil, batteryPercent: Double? = nil, powerSaver: Bool? = nil) {
        self.onBattery = onBattery
        self.batteryPercent = batteryPercent
        self.powerSaver = powerSaver
    }
}

/// The most bytes a second the transfers receive: those of background downloads (non-essential, not started in
/// the foreground) together, and every download together. Nil: no limit.
public struct RateCeilings: Sendable, Hashable {
    public var background: Int64?
    public var all: Int64?

    public init(background: Int64? = nil, all: Int64? = nil) {
        self.background = background
        self.all = all
    }
}

/// The free space a download must leave on the volume it is written to (`storage.floor-percent`,
/// `storage.floor-size`): the smaller of a share of the volume and a size, so that a small disk keeps a share and a
/// large one no more than the size.
public struct StorageFloor: Sendable, Hashable {
    public var percent: Int
    public var bytes: Int64

    public init(percent: Int = 5, bytes: Int64 = 2 << 30) {
        self.percent = percent
        self.bytes = bytes
    }

    /// The floor on a volume of `size` bytes.
    public func bytes(onVolumeOf size: Int64) -> Int64 { min(size / 100 * Int64(percent), bytes) }
}
