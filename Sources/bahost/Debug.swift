import ArgumentParser
import Foundation
import ServiceWire
import Vocabulary

/// `bahost debug`: Apple's `backgroundassets-debug`, against the running service.
struct Debug: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "debug",
        abstract: "Simulate events, inspect downloads and the scheduler, and adjust budgets (backgroundassets-debug).",
        subcommands: [
            Simulate.self, Downloads.self, Packs.self, Status.self, ResetBudget.self, Budget.self,
            BackgroundRefresh.self, MaxRate.self, Conditions.self, Clock.self, URLOverride.self,
        ])

    struct Simulate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "simulate",
            abstract: "Send an app's extension a content request now, as the system would.")
        @Option(help: "The app's CFBundleIdentifier.") var app: String
        @Option(help: "install, update, periodic or language-change.") var event: String
        @OptionGroup var service: ServiceOptions
        func run() throws { try service.run(.simulate(appIdentifier: app, request: event)) }
    }

    struct Downloads: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "downloads", abstract: "List an app's downloads with their state and progress.")
        @Option(help: "The app's CFBundleIdentifier.") var app: String
        @OptionGroup var service: ServiceOptions
        func run() throws { try service.run(.downloads(appIdentifier: app)) }
    }

    struct Packs: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "packs",
            abstract: "List a managed app's asset packs: policy, installed and available versions, size on disk.")
        @Option(help: "The app's CFBundleIdentifier.") var app: String
        @OptionGroup var service: ServiceOptions
        func run() throws { try service.run(.packs(appIdentifier: app)) }
    }

    struct URLOverride: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "url-override",
            abstract: "Fetch the managed apps' download manifest (or one app's manifest) from another URL, such as a bahost serve (development).",
            discussion: """
                Apple's `ba-serve url-override`: without --app, every installed managed app; with --app, that app \
                only (managed or not). The override lasts until --clear, across updates of the app; the app's \
                policy still applies to it (before the app's first launch, its host must be on \
                BADownloadDomainAllowList). Needs a service started with --development.
                """)
        @Option(help: "One app's CFBundleIdentifier (default: every managed app).") var app: String?
        @Argument(help: "The manifest URL to use, e.g. https://127.0.0.1:8443/download-manifest.json.") var url: String?
        @Flag(help: "Use the app's BAManifestURL again.") var clear = false
        @OptionGroup var service: ServiceOptions

        func validate() throws {
            guard (url == nil) == clear else { throw ValidationError("give a URL, or --clear") }
        }

        func run() throws { try service.run(.overrideManifestURL(appIdentifier: app, url: clear ? nil : url)) }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show the scheduler: each app's usage, cadence, next periodic request, runtime used; the machine's conditions.")
        @OptionGroup var service: ServiceOptions
        func run() throws { try service.run(.status) }
    }

    struct ResetBudget: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-budget", abstract: "Give an app back today's extension runtime budget.")
        @Option(help: "The app's CFBundleIdentifier.") var app: String
        @OptionGroup var service: ServiceOptions
        func run() throws { try service.run(.resetBudget(appIdentifier: app)) }
    }

    struct Budget: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "budget",
            abstract: "Lift (or restore) an app's daily runtime budget while developing its extension.")
        @Option(help: "The app's CFBundleIdentifier.") var app: String
        @Option(help: "on: no daily limit; off: the limit applies.") var unlimited: Toggle
        @OptionGroup var service: ServiceOptions
        func run() throws { try service.run(.setUnlimitedRuntime(appIdentifier: app, enabled: unlimited == .on)) }
    }

    struct BackgroundRefresh: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "background-refresh",
            abstract: "Turn an app's background refresh on or off: off, it gets no periodic content requests.")
        @Option(help: "The app's CFBundleIdentifier.") var app: String
        @Argument(help: "on or off.") var state: Toggle
        @OptionGroup var service: ServiceOptions
        func run() throws { try service.run(.setBackgroundRefresh(appIdentifier: app, enabled: state == .on)) }
    }

    struct MaxRate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "max-rate",
            abstract: "Set the most the service's downloads may receive together: the setting rate.all.",
            discussion: "RATE is bytes a second, with K, M or G for 1024s (as curl's --limit-rate); 0 or off for no limit. "
                + "The same as `bahost settings set rate.all RATE`: it is kept in the settings file.")
        @Argument(help: "The rate, e.g. 2M; 0 or off for no limit.") var rate: ByteRate
        @OptionGroup var service: ServiceOptions
        func run() throws { try service.run(.setMaximumRate(bytesPerSecond: rate.limit)) }
    }

    struct Conditions: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "conditions",
            abstract: "Development: override the machine's power and network signals (needs daemon --development).")
        @Option(help: "on, off, or auto (read the machine).") var powerSaver: Tristate = .auto
        @Option(help: "on, off, or auto (read the machine).") var batteryLow: Tristate = .auto
        @Option(help: "on, off, or auto (read the machine).") var metered: Tristate = .auto
        @OptionGroup var service: ServiceOptions
        func run() throws {
            try service.run(.setConditions(SystemConditions(
                powerSaver: powerSaver.value, batteryLow: batteryLow.value, metered: metered.value)))
        }
    }

    struct Clock: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "clock",
            abstract: "Development: move the service's clock forward and run the periodic scheduler (needs daemon --development).")
        @Option(help: "Seconds to move forward (0 just runs the scheduler).") var advance: Double
        @OptionGroup var service: ServiceOptions
        func validate() throws { guard advance >= 0 else { throw ValidationError("the clock only moves forward") } }
        func run() throws { try service.run(.advanceClock(seconds: advance)) }
    }
}

enum Toggle: String, ExpressibleByArgument {
    case on, off
}

enum Tristate: String, ExpressibleByArgument {
    case on, off, auto

    var value: Bool? {
        switch self {
        case .on: true
        case .off: false
        case .auto: nil
        }
    }
}
