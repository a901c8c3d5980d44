import Foundation
import HostVocabulary
import PersonSettings
import Testing

/// The settings file: what it takes, what it refuses (naming the key and the file), and what it writes.
@Suite struct SettingsFileTests {
    @Test func theDefaultsAreWhatAPersonExpects() {
        let defaults = PersonSettings.defaults
        #expect(defaults.backgroundRate == nil && defaults.allRate == nil && defaults.hours == nil)
        #expect(defaults.whilePlaying == .wait && defaults.batteryBelow == 30 && defaults.waitInPowerSaver)
        #expect(defaults.storageFloor == StorageFloor(percent: 5, bytes: 2 << 30))
        #expect(defaults.storageFloor.bytes(onVolumeOf: 10 << 30) == (10 << 30) / 100 * 5)
        #expect(defaults.storageFloor.bytes(onVolumeOf: 1 << 40) == 2 << 30)
    }

    @Test func aFileSaysEachSettingInItsTable() throws {
        let settings = try SettingsFile.parse("""
            # mine
            [rate]
            background = "2M"
            all = 10485760
            [schedule]
            hours = "23:30-07:00"
            outside = "256K"
            [game]
            while-playing = "512K"
            [power]
            battery-below = 50
            power-saver = "run"
            [storage]
            floor-percent = 10
            floor-size = "5G"
            """)
        #expect(settings.backgroundRate == 2 << 20 && settings.allRate == 10 << 20)
        #expect(settings.hours?.description == "23:30-07:00" && settings.outsideRate == 256 << 10)
        #expect(settings.whilePlaying == .cap(512 << 10))
        #expect(settings.batteryBelow == 50 && !settings.waitInPowerSaver)
        #expect(settings.storageFloor == StorageFloor(percent: 10, bytes: 5 << 30))
        // Written back, and read again, it is the same.
        #expect(try SettingsFile.parse(SettingsFile.render(settings)) == settings)
    }

    @Test func aBadFileIsRefusedNamingTheKeyAndTheFile() {
        func refusal(_ text: String) -> String {
            do {
                _ = try SettingsFile.parse(text, file: "/home/u/.config/bahost/settings.toml")
                return "accepted"
            } catch {
                return error.description
            }
        }
        #expect(refusal("[rate]\nbackground = \"fast\"\n")
            == "/home/u/.config/bahost/settings.toml: rate.background: 'fast' is not a rate (2M, 512K, bytes a second, or off)")
        #expect(refusal("[rate]\nspeed = \"2M\"\n").hasPrefix("/home/u/.config/bahost/settings.toml: rate.speed: there is no such setting"))
        #expect(refusal("[colours]\nsky = \"blue\"\n").contains("colours: is not a table of settings"))
        #expect(refusal("[power]\nbattery-below = 150\n").contains("power.battery-below: '150' is not a percentage from 0 to 100"))
        #expect(refusal("[schedule]\nhours = \"25:00-07:00\"\n").contains("schedule.hours: '25:00-07:00' is not HH:MM-HH:MM"))
        #expect(refusal("[rate\nbackground = 1").contains("line 1"))
        #expect(refusal("[power]\npower-saver = true\n").contains("power.power-saver: must be a string or a whole number"))
    }

    @Test func setAndResetOnTheCommandLinesWords() throws {
        var settings = PersonSettings()
        try settings.set("rate.background", to: "1.5M")
        #expect(settings.text(of: "rate.background") == "1536K")
        try settings.set("schedule.hours", to: "01:00-07:00")
        try settings.set("game.while-playing", to: "run")
        #expect(settings.whilePlaying == .run)
        try settings.reset("game.while-playing")
        #expect(settings.whilePlaying == .wait)
        try settings.set("rate.background", to: "off")
        #expect(settings.backgroundRate == nil)
        #expect(throws: SettingError.self) { try settings.set("game.while-playing", to: "sometimes") }
        #expect(PersonSettings.parseRate("2MiB") == .some(2 << 20) && PersonSettings.parseRate("300") == .some(300))
        #expect(throws: SettingError(key: "rate.all", "300 a second is below the least a ceiling may be, 16K")) {
            try settings.set("rate.all", to: "300")
        }
        #expect(PersonSettings.parseRate("-1") == nil && PersonSettings.parseRate("lots") == nil)
    }

    @Test func whomToShareWithAndHowFast() throws {
        var settings = PersonSettings()
        try settings.set("peers.share", to: "ANY")
        try settings.set("peers.upload", to: "4M")
        #expect(settings.peers == .any && settings.peerUploadRate == 4 << 20)
        try settings.set("peers.upload", to: "off")
        #expect(settings.peerUploadRate == nil)
        #expect(throws: SettingError.self) { try settings.set("peers.share", to: "everyone") }
        #expect(throws: SettingError.self) { try settings.set("peers.upload", to: "1K") }
        let parsed = try SettingsFile.parse("[peers]\nshare = \"off\"\nupload = \"2M\"\n")
        #expect(parsed.peers == .off && parsed.peerUploadRate == 2 << 20)
        #expect(SettingsFile.render(parsed).contains("share = \"off\""))
    }

    @Test func aPairingIsWrittenForItsOwnerAloneAndReadBack() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pairing-\(UUID().uuidString)")
        let file = PairingFile(path: folder.appendingPathComponent("pairing.pem").path)
        #expect(try file.read() == nil)
        func block(_ kind: String, _ body: String) -> String {
            "-----BEGIN \(kind)-----\n\(body)\n-----END \(kind)-----\n"
        }
        let contents = PairingFile.Contents(
            pairing: PeerPairing(
                authority: block("CERTIFICATE", "QUFB"), certificate: block("CERTIFICATE", "Q0ND"),
                key: block("PRIVATE KEY", "S0tL")),
            authorityKey: block("PRIVATE KEY", "WFhY"))
        try file.write(contents)
        #expect(try file.read() == contents)
        var info = stat()
        #expect(stat(file.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        try Data(block("CERTIFICATE", "QUFB").utf8).write(to: URL(fileURLWithPath: file.path))
        #expect(throws: SettingError.self) { try file.read() }
        #expect(file.remove())
        #expect(try file.read() == nil)
    }

    @Test func theFileIsWrittenWholeAndReadBack() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = SettingsFile(path: folder.appendingPathComponent("bahost/settings.toml").path)
        #expect(try file.read() == .defaults)
        var settings = PersonSettings()
        try settings.set("power.battery-below", to: "45")
        try file.write(settings)
        #expect(try file.read() == settings)
        let text = try String(contentsOfFile: file.path, encoding: .utf8)
        #expect(text.contains("[power]\nbattery-below = \"45\"") && !text.contains("[rate]"))
    }
}

/// The rules: what holds background downloads, for how long, and at what rates, from the settings and what the
/// machine says.
@Suite struct PersonRulesTests {
    var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }

    func at(_ hour: Int, _ minute: Int = 0) -> Date {
        calendar.date(from: DateComponents(year: 2026, month: 12, day: 7, hour: hour, minute: minute))!
    }

    @Test func nothingIsHeldByDefaultOnMains() {
        let decision = PersonRules(.defaults).decide(.init(power: PowerState(onBattery: false)), now: at(12), calendar: calendar)
        #expect(decision.hold == nil && decision.ceilings == RateCeilings() && decision.nextChange == nil)
    }

    @Test func aGameHoldsOrCaps() {
        var settings = PersonSettings()
        let playing = PersonRules.Inputs(gameModeClients: 1)
        #expect(PersonRules(settings).decide(playing, now: at(12)).hold == .game("GameMode reports 1 client"))
        #expect(PersonRules(settings).decide(.init(gameModeClients: 0), now: at(12)).hold == nil)
        #expect(PersonRules(settings).decide(.init(appsPlaying: ["com.example.game"]), now: at(12)).hold
            == .game("com.example.game says it is playing"))
        settings.whilePlaying = .cap(1 << 20)
        settings.backgroundRate = 4 << 20
        let capped = PersonRules(settings).decide(playing, now: at(12))
        #expect(capped.hold == nil && capped.ceilings.background == 1 << 20)
        settings.whilePlaying = .run
        #expect(PersonRules(settings).decide(playing, now: at(12)).ceilings.background == 4 << 20)
    }

    @Test func theScheduleHoldsOutsideItsHoursUntilTheyOpen() throws {
        var settings = PersonSettings()
        settings.hours = try #require(DailyHours("23:00-06:30"))
        let rules = PersonRules(settings)
        let outside = rules.decide(.init(), now: at(12), calendar: calendar)
        #expect(outside.hold == .schedule(hours: "23:00-06:30", opens: at(23)))
        #expect(outside.nextChange == at(23))
        let inside = rules.decide(.init(), now: at(23, 30), calendar: calendar)
        #expect(inside.hold == nil)
        #expect(inside.nextChange == calendar.date(byAdding: .day, value: 1, to: at(6, 30)))
        settings.outsideRate = 100 << 10
        settings.insideRate = 8 << 20
        #expect(PersonRules(settings).decide(.init(), now: at(12), calendar: calendar).ceilings.background == 100 << 10)
        #expect(PersonRules(settings).decide(.init(), now: at(2), calendar: calendar).ceilings.background == 8 << 20)
    }

    @Test func theBatteryAndThePowerSaver() {
        let rules = PersonRules(.defaults)
        func hold(_ power: PowerState) -> PersonHold? { rules.decide(.init(power: power), now: at(12)).hold }
        #expect(hold(PowerState(onBattery: true, batteryPercent: 20)) == .battery(percent: 20, below: 30))
        #expect(hold(PowerState(onBattery: true, batteryPercent: 80)) == nil)
        // Unknown charge on battery: only "whenever on battery" holds.
        #expect(hold(PowerState(onBattery: true)) == nil)
        #expect(hold(PowerState(onBattery: false, batteryPercent: 5)) == nil)
        #expect(hold(PowerState(onBattery: false, powerSaver: true)) == .powerSaver)
        var always = PersonSettings()
        always.batteryBelow = 100
        always.waitInPowerSaver = false
        #expect(PersonRules(always).decide(.init(power: PowerState(onBattery: true)), now: at(12)).hold
            == .battery(percent: nil, below: 100))
        #expect(PersonRules(always).decide(.init(power: PowerState(powerSaver: true)), now: at(12)).hold == nil)
    }

    @Test func theCeilingForEveryDownloadIsThePersonsOwn() {
        var settings = PersonSettings()
        settings.allRate = 3 << 20
        #expect(PersonRules(settings).decide(.init(), now: at(12)).ceilings == RateCeilings(background: nil, all: 3 << 20))
    }

    @Test func onlyDiscretionaryDownloadsAreHeld() {
        let conditions = NetworkConditions(person: .powerSaver)
        #expect(conditions.hold(NetworkUse(discretionary: true, access: [], host: "127.0.0.1")) == .person(.powerSaver))
        #expect(conditions.hold(NetworkUse(discretionary: false, access: [], host: "cdn.example.com")) == nil)
        #expect(conditions.holdsAny)
    }

    @Test func peersShareWithTheOwnMachinesOnlyOncePairedAndServeNobodyOnBattery() {
        let rules = PersonRules(.defaults)
        let unpaired = rules.decide(.init(), now: at(12)).peers
        #expect(unpaired.mode == .own && unpaired.uploadRate == 16 << 20 && unpaired.notServing == nil)
        #expect(!unpaired.sharesWithAnyone, "an unpaired machine in 'own' shares with nobody")
        var inputs = PersonRules.Inputs()
        inputs.pairing = PeerPairing(authority: "A", certificate: "C", key: "K")
        #expect(rules.decide(inputs, now: at(12)).peers.sharesWithAnyone)
        inputs.power = PowerState(onBattery: true, batteryPercent: 90)
        let onBattery = rules.decide(inputs, now: at(12)).peers
        #expect(onBattery.notServing == "on battery" && onBattery.sharesWithAnyone)
        var off = PersonSettings()
        off.peers = .off
        #expect(!PersonRules(off).decide(inputs, now: at(12)).peers.sharesWithAnyone)
        var any = PersonSettings()
        any.peers = .any
        #expect(PersonRules(any).decide(.init(), now: at(12)).peers.sharesWithAnyone)
    }
}
