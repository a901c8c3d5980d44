/// What the machine says about power and network, each signal optional: nil when this machine does not tell.
///
/// The same shape carries a developer's overrides (`bahost debug conditions`), where nil means "keep reading the
/// real signal".
public struct SystemConditions: Sendable, Hashable, Codable {
    /// power-profiles-daemon's active profile is `power-saver` (or the firmware's platform profile `low-power`).
    public var powerSaver: Bool?
    /// Running on battery below the policy's threshold, with no mains or USB supply online.
    public var batteryLow: Bool?
    /// NetworkManager says the connection is metered (`yes` or `guess-yes`).
    public var metered: Bool?

    public init(powerSaver: Bool? = nil, batteryLow: Bool? = nil, metered: Bool? = nil) {
        self.powerSaver = powerSaver
        self.batteryLow = batteryLow
        self.metered = metered
    }

    /// These conditions with each override that is set taking the place of what the machine says.
    public func overridden(by overrides: SystemConditions) -> SystemConditions {
        SystemConditions(
            powerSaver: overrides.powerSaver ?? powerSaver, batteryLow: overrides.batteryLow ?? batteryLow,
            metered: overrides.metered ?? metered)
    }
}
