import Foundation
import HostVocabulary

/// What the person says about background downloads (docs/DOWNLOADS.md, "What the person decides"): ceilings, the
/// hours background downloads may run, what happens while a game runs, on battery and in power saver, and the free
/// space every download leaves. Each has the default a person would expect; `SettingsFile` reads and writes them,
/// `PersonRules` turns them and the machine's state into what is held and at what rate.
public struct PersonSettings: Sendable, Hashable {
    /// `rate.background`: the most background downloads (non-essential, not started in the foreground) receive
    /// together; nil for no limit.
    public var backgroundRate: Int64?
    /// `rate.all`: the most every download receives together, essential and foreground ones too; nil for none.
    public var allRate: Int64?
    /// `schedule.hours`: when background downloads may run; nil for always.
    public var hours: DailyHours?
    /// `schedule.inside-rate`: a ceiling for background downloads during the hours; nil for `rate.background`.
    public var insideRate: Int64?
    /// `schedule.outside`: outside the hours, background downloads wait (nil) or run at most this rate.
    public var outsideRate: Int64?
    /// `game.while-playing`: while a game runs, background downloads wait, run, or run at most a rate.
    public var whilePlaying: WhilePlaying
    /// `power.battery-below`: on battery below this percentage, background downloads wait (0: never; 100: whenever
    /// on battery).
    public var batteryBelow: Int
    /// `power.power-saver`: in the power-saver profile, background downloads wait (true) or run.
    public var waitInPowerSaver: Bool
    /// `storage.floor-percent`, `storage.floor-size`: the free space every download leaves on its volume.
    public var storageFloor: StorageFloor
    /// `peers.share`: which machines on the network this one shares apps' packs with (the apps that allow it).
    public var peers: PeerSharingMode
    /// `peers.upload`: the most this machine sends peers together, bytes a second; nil for no limit.
    public var peerUploadRate: Int64?

    public typealias PeerSharingMode = PeerRules.Mode

    public enum WhilePlaying: Sendable, Hashable {
        case wait
        case run
        case cap(Int64)
    }

    public init() {
        whilePlaying = .wait
        batteryBelow = 30
        waitInPowerSaver = true
        storageFloor = StorageFloor()
        peers = .own
        peerUploadRate = 16 << 20
    }

    public static let defaults = PersonSettings()

    /// One setting: its name in the file and on the command line, what it takes, and what it means.
    public struct Key: Sendable, Hashable {
        public let name: String
        public let values: String
        public let meaning: String
    }

    /// Every setting, in the file's order.
    public static let keys: [Key] = [
        Key(name: "rate.background", values: "a rate (2M, 512K, bytes a second) or off",
            meaning: "the most background downloads receive together"),
        Key(name: "rate.all", values: "a rate or off",
            meaning: "the most every download receives together, essential and foreground ones too"),
        Key(name: "schedule.hours", values: "HH:MM-HH:MM (may pass midnight) or always",
            meaning: "when background downloads may run"),
        Key(name: "schedule.inside-rate", values: "a rate or off",
            meaning: "the most background downloads receive during the hours (beside rate.background)"),
        Key(name: "schedule.outside", values: "wait, or a rate",
            meaning: "outside the hours, background downloads wait, or run at most the rate"),
        Key(name: "game.while-playing", values: "wait, run, or a rate",
            meaning: "while a game runs (GameMode, or an app that says so), background downloads wait, run, or run "
                + "at most the rate"),
        Key(name: "power.battery-below", values: "a percentage, 0 to 100",
            meaning: "on battery below it, background downloads wait (100: whenever on battery; 0: never)"),
        Key(name: "power.power-saver", values: "wait or run",
            meaning: "in the power-saver profile, background downloads wait, or run"),
        Key(name: "storage.floor-percent", values: "a percentage, 0 to 50",
            meaning: "a download never leaves its volume with less free than this share of it (or floor-size)"),
        Key(name: "storage.floor-size", values: "a size (2G, 500M, bytes)",
            meaning: "a download never leaves its volume with less free than this (or floor-percent), whichever "
                + "is smaller"),
        Key(name: "peers.share", values: "off, own or any",
            meaning: "share the packs of apps that allow it with: nobody, this person's paired machines (bahost peers "
                + "pair), or any bahost on the network"),
        Key(name: "peers.upload", values: "a rate or off",
            meaning: "the most this machine sends to peers, together"),
    ]

    /// A setting's value as the file and `bahost settings show` write it.
    public func text(of key: String) -> String? {
        switch key {
        case "rate.background": Self.rateText(backgroundRate)
        case "rate.all": Self.rateText(allRate)
        case "schedule.hours": hours.map(\.description) ?? "always"
        case "schedule.inside-rate": Self.rateText(insideRate)
        case "schedule.outside": outsideRate.map { Self.rateText($0) } ?? "wait"
        case "game.while-playing":
            switch whilePlaying {
            case .wait: "wait"
            case .run: "run"
            case .cap(let rate): Self.rateText(rate)
            }
        case "power.battery-below": "\(batteryBelow)"
        case "power.power-saver": waitInPowerSaver ? "wait" : "run"
        case "storage.floor-percent": "\(storageFloor.percent)"
        case "storage.floor-size": Self.sizeText(storageFloor.bytes)
        case "peers.share": peers.rawValue
        case "peers.upload": Self.rateText(peerUploadRate)
        default: nil
        }
    }

    /// Sets `key` from `text` (the command line's words, or the file's value as text); throws what is wrong.
    public mutating func set(_ key: String, to text: String) throws(SettingError) {
        let value = text.trimmingCharacters(in: .whitespaces)
        func rate() throws(SettingError) -> Int64? {
            guard let parsed = Self.parseRate(value) else {
                throw SettingError(key: key, "'\(value.printableSetting)' is not a rate (2M, 512K, bytes a second, or off)")
            }
            return try Self.checked(parsed, key: key)
        }
        func percent(_ range: ClosedRange<Int>) throws(SettingError) -> Int {
            guard let number = Int(value.hasSuffix("%") ? String(value.dropLast()) : value), range.contains(number)
            else { throw SettingError(key: key, "'\(value.printableSetting)' is not a percentage from \(range.lowerBound) to \(range.upperBound)") }
            return number
        }
        switch key {
        case "rate.background": backgroundRate = try rate()
        case "rate.all": allRate = try rate()
        case "schedule.hours":
            if value.lowercased() == "always" {
                hours = nil
            } else {
                guard let parsed = DailyHours(value) else {
                    throw SettingError(key: key, "'\(value.printableSetting)' is not HH:MM-HH:MM (say 01:00-07:00) or always")
                }
                hours = parsed
            }
        case "schedule.inside-rate": insideRate = try rate()
        case "schedule.outside":
            if value.lowercased() == "wait" {
                outsideRate = nil
            } else {
                guard let parsed = Self.parseRate(value), let parsed else {
                    throw SettingError(key: key, "'\(value.printableSetting)' is neither wait nor a rate (2M, 512K)")
                }
                outsideRate = try Self.checked(parsed, key: key)
            }
        case "game.while-playing":
            switch value.lowercased() {
            case "wait": whilePlaying = .wait
            case "run": whilePlaying = .run
            default:
                guard let parsed = Self.parseRate(value), let parsed else {
                    throw SettingError(key: key, "'\(value.printableSetting)' is none of wait, run, or a rate (2M, 512K)")
                }
                whilePlaying = .cap(try Self.checked(parsed, key: key)!)
            }
        case "power.battery-below": batteryBelow = try percent(0...100)
        case "power.power-saver":
            switch value.lowercased() {
            case "wait": waitInPowerSaver = true
            case "run": waitInPowerSaver = false
            default: throw SettingError(key: key, "'\(value.printableSetting)' is neither wait nor run")
            }
        case "storage.floor-percent": storageFloor.percent = try percent(0...50)
        case "storage.floor-size":
            guard let parsed = Self.parseRate(value), let parsed else {
                throw SettingError(key: key, "'\(value.printableSetting)' is not a size (2G, 500M, bytes)")
            }
            storageFloor.bytes = parsed
        case "peers.share":
            guard let mode = PeerSharingMode(rawValue: value.lowercased()) else {
                throw SettingError(key: key, "'\(value.printableSetting)' is none of off, own, any")
            }
            peers = mode
        case "peers.upload": peerUploadRate = try rate()
        default:
            throw SettingError(
                key: key, "there is no such setting (bahost settings show lists them: "
                    + Self.keys.map(\.name).joined(separator: ", ") + ")")
        }
    }

    /// Sets `key` back to its default.
    public mutating func reset(_ key: String) throws(SettingError) {
        guard let text = Self.defaults.text(of: key) else {
            throw SettingError(key: key, "there is no such setting (bahost settings show lists them)")
        }
        try set(key, to: text)
    }

    /// The least a ceiling may be: slower, a download's pace would look like a stalled server (the transfer layer
    /// fails one that receives less than 64 KiB a minute).
    public static let leastRate: Int64 = 16 << 10

    private static func checked(_ rate: Int64?, key: String) throws(SettingError) -> Int64? {
        guard let rate, rate < leastRate else { return rate }
        throw SettingError(key: key, "\(sizeText(rate)) a second is below the least a ceiling may be, 16K")
    }

    /// "2M", "512K", "1.5G", "300" (bytes a second), "off" or "0" (nil: no limit); nil for what is none of these.
    public static func parseRate(_ text: String) -> Int64?? {
        let lowered = text.trimmingCharacters(in: .whitespaces).lowercased()
        if lowered == "off" || lowered == "none" || lowered == "0" { return .some(nil) }
        let units: [Character: Double] = ["k": 1024, "m": 1024 * 1024, "g": 1024 * 1024 * 1024]
        var body = lowered
        if body.hasSuffix("/s") { body.removeLast(2) }
        // "2MiB", "2MB": the unit's letter is what counts (bahost's units are 1024s, as curl's --limit-rate).
        for suffix in ["ib", "b"] where body.count > suffix.count + 1 && body.hasSuffix(suffix) {
            let before = body.dropLast(suffix.count)
            if let last = before.last, units[last] != nil {
                body = String(before)
                break
            }
        }
        let unit = body.last.flatMap { units[$0] }
        guard let number = Double(unit == nil ? body : String(body.dropLast())), number > 0, number.isFinite,
            number * (unit ?? 1) < Double(Int64.max / 2)
        else { return nil }
        return .some(Int64(number * (unit ?? 1)))
    }

    /// "2M" for 2 MiB, "1536K", "300": the shortest exact form.
    public static func sizeText(_ bytes: Int64) -> String {
        for (unit, size) in [("G", Int64(1) << 30), ("M", Int64(1) << 20), ("K", Int64(1) << 10)]
        where bytes >= size && bytes % size == 0 {
            return "\(bytes / size)\(unit)"
        }
        return "\(bytes)"
    }

    static func rateText(_ rate: Int64?) -> String { rate.map(sizeText) ?? "off" }
}

/// A setting that cannot be taken: which, and why; with the file when it came from one.
public struct SettingError: Error, Sendable, Hashable, CustomStringConvertible {
    public var key: String
    public var problem: String
    public var file: String?

    public init(key: String, _ problem: String, file: String? = nil) {
        self.key = key
        self.problem = problem
        self.file = file
    }

    public var description: String {
        (file.map { "\($0): " } ?? "") + (key.isEmpty ? "" : "\(key): ") + problem
    }
}

/// Hours of each day, from `start` to `end` (minutes after midnight), passing midnight when `end` comes first.
public struct DailyHours: Sendable, Hashable, CustomStringConvertible {
    public var start: Int
    public var end: Int

    /// "01:00-07:00"; nil for anything else, or an empty span.
    public init?(_ text: String) {
        let parts = text.split(separator: "-").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, let start = Self.minutes(parts[0]), let end = Self.minutes(parts[1]), start != end
        else { return nil }
        self.start = start
        self.end = end
    }

    private static func minutes(_ text: String) -> Int? {
        let fields = text.split(separator: ":")
        guard fields.count == 2, fields[0].count <= 2, fields[1].count == 2, let hour = Int(fields[0]),
            let minute = Int(fields[1]), (0...24).contains(hour), (0...59).contains(minute), hour * 60 + minute <= 1440
        else { return nil }
        return hour * 60 + minute
    }

    public var description: String {
        String(format: "%02d:%02d-%02d:%02d", start / 60, start % 60, end / 60, end % 60)
    }

    /// Whether `minute` (after midnight) is inside.
    public func contains(minute: Int) -> Bool {
        start < end ? (start..<end).contains(minute) : minute >= start || minute < end
    }

    /// Whether `date` is inside, on `calendar`'s clock (the machine's time zone).
    public func contains(_ date: Date, calendar: Calendar = .current) -> Bool {
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return contains(minute: (parts.hour ?? 0) * 60 + (parts.minute ?? 0))
    }

    /// The next moment after `date` at which being inside changes (the next start or end).
    public func nextChange(after date: Date, calendar: Calendar = .current) -> Date {
        let boundary = contains(date, calendar: calendar) ? end : start
        let components = DateComponents(hour: boundary / 60 % 24, minute: boundary % 60, second: 0)
        return calendar.nextDate(after: date, matching: components, matchingPolicy: .nextTime) ?? date.addingTimeInterval(60)
    }
}

extension String {
    /// A value a person typed, as an error shows it: bounded, with control characters escaped.
    var printableSetting: String {
        let limited = count > 80 ? String(prefix(80)) + "…" : self
        return limited.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }
            .joined()
    }
}
