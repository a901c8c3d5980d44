import Foundation
import HostVocabulary

/// The person's settings applied to the machine's state: what holds background downloads now, at what rates the
/// downloads receive, and when the answer changes by the clock alone. A value with no I/O (`PersonRulesTests`): the
/// service feeds it what GameMode, UPower and power-profiles-daemon say and the time, and hands its decision to the
/// engine. Only background downloads (non-essential, not started in the foreground) are ever held or given the
/// background ceiling: the person is waiting for the others (Apple's discretionary work).
public struct PersonRules: Sendable, Hashable {
    /// What the machine says now.
    public struct Inputs: Sendable, Hashable {
        /// GameMode's `ClientCount`: games that asked it to optimise the machine; nil without GameMode.
        public var gameModeClients: Int?
        /// Apps bahost launched that say they are playing (`ba_app_set_playing`).
        public var appsPlaying: Set<String>
        public var power: PowerState
        /// The household this machine is paired with (`PairingFile`); nil: not paired.
        public var pairing: PeerPairing?

        public init(gameModeClients: Int? = nil, appsPlaying: Set<String> = [], power: PowerState = PowerState()) {
            self.gameModeClients = gameModeClients
            self.appsPlaying = appsPlaying
            self.power = power
        }

        /// Who is playing, in words; nil when nobody is.
        public var playing: String? {
            var who: [String] = []
            if let clients = gameModeClients, clients > 0 {
                who.append("GameMode reports \(clients) client\(clients == 1 ? "" : "s")")
            }
            who += appsPlaying.sorted().map { "\($0) says it is playing" }
            return who.isEmpty ? nil : who.joined(separator: "; ")
        }
    }

    /// What the rules decide.
    public struct Decision: Sendable, Hashable {
        /// What holds background downloads now, nil when nothing does.
        public var hold: PersonHold?
        public var ceilings: RateCeilings
        /// When the clock alone changes the decision (the schedule's next start or end); nil: never.
        public var nextChange: Date?
        /// Sharing with peers: with whom, how fast, and whether this machine serves now.
        public var peers: PeerRules = .off
    }

    public var settings: PersonSettings

    public init(_ settings: PersonSettings) { self.settings = settings }

    public func decide(_ inputs: Inputs, now: Date, calendar: Calendar = .current) -> Decision {
        var background: [Int64] = settings.backgroundRate.map { [$0] } ?? []
        var hold: PersonHold?
        func held(_ reason: PersonHold) { if hold == nil { hold = reason } }

        if let who = inputs.playing {
            switch settings.whilePlaying {
            case .wait: held(.game(who))
            case .run: break
            case .cap(let rate): background.append(rate)
            }
        }
        var nextChange: Date?
        if let hours = settings.hours {
            nextChange = hours.nextChange(after: now, calendar: calendar)
            if hours.contains(now, calendar: calendar) {
                if let inside = settings.insideRate { background.append(inside) }
            } else if let outside = settings.outsideRate {
                background.append(outside)
            } else {
                held(.schedule(hours: hours.description, opens: nextChange!))
            }
        }
        let power = inputs.power
        if power.onBattery == true && settings.batteryBelow > 0 {
            let percent = power.batteryPercent.map { Int($0.rounded(.down)) }
            if settings.batteryBelow >= 100 || percent.map({ $0 < settings.batteryBelow }) == true {
                held(.battery(percent: percent, below: settings.batteryBelow))
            }
        }
        if power.powerSaver == true && settings.waitInPowerSaver { held(.powerSaver) }
        // A machine on battery serves no peer: sending costs its battery, and a laptop leaves the house.
        let peers = PeerRules(
            mode: settings.peers, uploadRate: settings.peerUploadRate,
            notServing: power.onBattery == true ? "on battery" : nil, pairing: inputs.pairing)
        return Decision(
            hold: hold, ceilings: RateCeilings(background: background.min(), all: settings.allRate),
            nextChange: nextChange, peers: peers)
    }
}
