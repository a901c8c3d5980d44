import Foundation
@testable import Service
import HostVocabulary
import Testing
import TestSupport
import Vocabulary

/// The periodic policy's decisions, and the reading of the machine's signals, as pure functions.
@Suite(.ownThreads) struct PeriodicPolicyTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let policy = PeriodicPolicy(interval: 3600, dailyRuntime: 60)

    func schedule(launchesAgo: [Double], next: Date? = nil) -> AppSchedule {
        var schedule = AppSchedule(appIdentifier: "com.example.levels", appDirectory: "/apps/levels")
        schedule.launches = launchesAgo.map { now.addingTimeInterval(-$0) }
        schedule.nextPeriodic = next
        return schedule
    }

    @Test func cadenceFollowsLaunchesInThePastWeek() {
        let day = 86400.0
        #expect(PeriodicPolicy.usage([], now: now) == .neverLaunched)
        #expect(PeriodicPolicy.usage((0..<7).map { now.addingTimeInterval(-Double($0) * day) }, now: now) == .frequent)
        #expect(PeriodicPolicy.usage([now.addingTimeInterval(-2 * day)], now: now) == .occasional)
        #expect(PeriodicPolicy.usage([now.addingTimeInterval(-8 * day)], now: now) == .rare)
        #expect(policy.cadence(.frequent) == 1800)
        #expect(policy.cadence(.occasional) == 3600)
        #expect(policy.cadence(.rare) == 14400)
        #expect(policy.cadence(.neverLaunched) == nil)
        #expect(policy.next(after: now, launches: [now]) == now.addingTimeInterval(3600))
    }

    @Test func decisionsInOrderOfPrecedence() {
        let due = schedule(launchesAgo: [100], next: now.addingTimeInterval(-1))
        #expect(policy.decide(due, conditions: SystemConditions(), now: now) == .run)
        #expect(policy.decide(schedule(launchesAgo: []), conditions: SystemConditions(), now: now)
            == .skip("the app has never been launched"))
        let later = now.addingTimeInterval(60)
        #expect(policy.decide(schedule(launchesAgo: [100], next: later), conditions: SystemConditions(), now: now) == .notDue(later))
        // Conditions only matter when a request is due; unknown signals skip nothing.
        #expect(policy.decide(due, conditions: SystemConditions(powerSaver: true), now: now)
            == .skip("the machine is in power-saver mode"))
        #expect(policy.decide(due, conditions: SystemConditions(batteryLow: true), now: now)
            == .skip("the machine is on battery below 20%"))
        #expect(policy.decide(due, conditions: SystemConditions(metered: true), now: now) == .skip("the network is metered"))
        var lenient = policy
        lenient.skipWhenMetered = false
        lenient.skipInPowerSaver = false
        #expect(lenient.decide(due, conditions: SystemConditions(powerSaver: true, metered: true), now: now) == .run)
        var off = due
        off.backgroundRefresh = false
        #expect(policy.decide(off, conditions: SystemConditions(), now: now) == .skip("background refresh is off for this app"))
    }

    @Test func runtimeIsCountedPerDayAndTheOverrideLiftsIt() {
        var app = schedule(launchesAgo: [100], next: now.addingTimeInterval(-1))
        policy.charge(45, to: &app, now: now)
        policy.charge(20, to: &app, now: now)
        #expect(policy.runtimeUsed(app, now: now) == 65)
        #expect(policy.decide(app, conditions: SystemConditions(), now: now) == .skip("today's runtime budget (60 s) is spent"))
        app.unlimitedRuntime = true
        #expect(policy.decide(app, conditions: SystemConditions(), now: now) == .run)
        // A new day starts from nothing.
        let tomorrow = now.addingTimeInterval(86400)
        #expect(policy.runtimeUsed(app, now: tomorrow) == 0)
        policy.charge(5, to: &app, now: tomorrow)
        #expect(app.budgetUsedSeconds == 5)
        #expect(app.budgetDay == PeriodicPolicy.day(tomorrow))
    }

    @Test func networkManagersMeteredValuesAreRead() {
        #expect(SystemConditionReader.meteredValue(1) == true)
        #expect(SystemConditionReader.meteredValue(3) == true)
        #expect(SystemConditionReader.meteredValue(2) == false)
        #expect(SystemConditionReader.meteredValue(4) == false)
        #expect(SystemConditionReader.meteredValue(0) == nil)
        #expect(SystemConditionReader.meteredValue(77) == nil)
    }

    @Test func powerSuppliesAndThePlatformProfileAreReadFromSysfs() throws {
        let root = TestPlugins.scratch.appendingPathComponent("sysfs-\(UUID().uuidString.prefix(8))")
        func write(_ path: String, _ value: String) throws {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try "\(value)\n".write(to: url, atomically: true, encoding: .utf8)
        }
        let reader = SystemConditionReader(sysfsRoot: root.path, readsSystemBus: false, lowBatteryPercent: 20)
        #expect(reader.read() == SystemConditions())

        try write("class/power_supply/BAT0/type", "Battery")
        try write("class/power_supply/BAT0/status", "Discharging")
        try write("class/power_supply/BAT0/capacity", "15")
        #expect(reader.batteryLow() == true)
        try write("class/power_supply/BAT0/capacity", "55")
        #expect(reader.batteryLow() == false)
        try write("class/power_supply/BAT0/capacity", "15")
        try write("class/power_supply/AC/type", "Mains")
        try write("class/power_supply/AC/online", "1")
        #expect(reader.batteryLow() == false)

        try write("firmware/acpi/platform_profile", "low-power")
        #expect(reader.powerSaver() == true)
        try write("firmware/acpi/platform_profile", "balanced")
        #expect(reader.powerSaver() == false)
    }
}
