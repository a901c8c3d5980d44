import Foundation
import HostVocabulary
import Vocabulary

/// When an app gets a `.periodic` content request, and how much extension runtime it may use in a day. Pure:
/// every decision is a function of the app's schedule, the machine's conditions and the time.
///
/// Apple: "the system determines when periodic events occur, depending on a person's usage and their system
/// settings"; none run in Low Power Mode or with Background App Refresh off; a new install gets "a few minutes of
/// runtime per day" (10, an Apple engineer said). bahost's cadence follows launches in the past week:
///
/// | launches in 7 days | a periodic request every |
/// |---|---|
/// | 7 or more (daily use) | `interval / 2` |
/// | 1 to 6 | `interval` |
/// | none (but launched before) | `interval × 4` |
/// | never launched | never: before its first launch an app has only its install request |
public struct PeriodicPolicy: Sendable, Hashable, Codable {
    /// The cadence of an app used now and then.
    public var interval: TimeInterval
    /// Extension runtime per app per day, counted over all its windows.
    public var dailyRuntime: TimeInterval
    /// Skip periodic requests on battery below this charge (percent).
    public var lowBatteryPercent: Int
    public var skipWhenMetered: Bool
    public var skipInPowerSaver: Bool

    public init(
        interval: TimeInterval = 12 * 3600, dailyRuntime: TimeInterval = 600, lowBatteryPercent: Int = 20,
        skipWhenMetered: Bool = true, skipInPowerSaver: Bool = true
    ) {
        self.interval = interval
        self.dailyRuntime = dailyRuntime
        self.lowBatteryPercent = lowBatteryPercent
        self.skipWhenMetered = skipWhenMetered
        self.skipInPowerSaver = skipInPowerSaver
    }

    public enum Usage: String, Sendable, Codable {
        case frequent, occasional, rare, neverLaunched
    }

    public static func usage(_ launches: [Date], now: Date) -> Usage {
        guard !launches.isEmpty else { return .neverLaunched }
        let lastWeek = launches.filter { now.timeIntervalSince($0) < 7 * 86400 }.count
        return lastWeek >= 7 ? .frequent : lastWeek >= 1 ? .occasional : .rare
    }

    /// The time between an app's periodic requests; nil when it gets none.
    public func cadence(_ usage: Usage) -> TimeInterval? {
        switch usage {
        case .frequent: interval / 2
        case .occasional: interval
        case .rare: interval * 4
        case .neverLaunched: nil
        }
    }

    public enum Decision: Sendable, Hashable {
        case run
        /// Not due before this date.
        case notDue(Date)
        /// Due, but skipped now; tried again at the scheduler's next turn.
        case skip(String)
    }

    public func decide(_ schedule: AppSchedule, conditions: SystemConditions, now: Date) -> Decision {
        guard schedule.backgroundRefresh else { return .skip("background refresh is off for this app") }
        guard cadence(Self.usage(schedule.launches, now: now)) != nil else {
            return .skip("the app has never been launched")
        }
        if let next = schedule.nextPeriodic, next > now { return .notDue(next) }
        if skipInPowerSaver && conditions.powerSaver == true { return .skip("the machine is in power-saver mode") }
        if conditions.batteryLow == true { return .skip("the machine is on battery below \(lowBatteryPercent)%") }
        if skipWhenMetered && conditions.metered == true { return .skip("the network is metered") }
        if !schedule.unlimitedRuntime && runtimeUsed(schedule, now: now) >= dailyRuntime {
            return .skip(String(format: "today's runtime budget (%g s) is spent", dailyRuntime))
        }
        return .run
    }

    /// When the next periodic request is due after one at `now`.
    public func next(after now: Date, launches: [Date]) -> Date? {
        cadence(Self.usage(launches, now: now)).map { now.addingTimeInterval($0) }
    }

    /// Seconds of runtime the app has used on `now`'s day.
    func runtimeUsed(_ schedule: AppSchedule, now: Date) -> TimeInterval {
        schedule.budgetDay == Self.day(now) ? schedule.budgetUsedSeconds : 0
    }

    /// Counts a window's runtime against the app's day.
    public func charge(_ seconds: TimeInterval, to schedule: inout AppSchedule, now: Date) {
        let day = Self.day(now)
        if schedule.budgetDay != day {
            schedule.budgetDay = day
            schedule.budgetUsedSeconds = 0
        }
        schedule.budgetUsedSeconds += seconds
    }

    /// The local calendar day of `date`, as `yyyy-MM-dd`.
    public static func day(_ date: Date) -> String {
        let parts = Calendar.current.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 0, parts.month ?? 0, parts.day ?? 0)
    }
}
