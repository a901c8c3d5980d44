import ExtensionRuntime
import Foundation
import Vocabulary
import Engine
import Synchronization

/// Sends `.periodic` content requests to launched apps on the cadence their usage earns, when the machine's
/// conditions and the app's runtime budget allow (`PeriodicPolicy`). Every decision is written to the app's
/// schedule before it is acted on, so that `bahost debug status` shows it and a killed service does not repeat it.
final class PeriodicScheduler: Sendable {
    let policy: PeriodicPolicy
    let interval: Duration
    /// One turn at a time: a turn asked for by `bahost debug clock` waits for the one in progress.
    private let busy = Mutex(false)
    private let turnEnded = Signal()

    init(policy: PeriodicPolicy, interval: Duration) {
        self.policy = policy
        self.interval = interval
    }

    func run(_ service: BackgroundAssetsService) async {
        while !Task.isCancelled {
            await turn(service)
            // Only cancellation wakes the loop early; `bahost debug clock` runs its own turn.
            try? await Task.sleep(for: interval)
        }
    }

    /// Looks at every app once; runs the periodic requests that are due. Returns what it decided, per app.
    @discardableResult
    func turn(_ service: BackgroundAssetsService) async -> [String: String] {
        while !busy.withLock({ busy in
            if busy { return false }
            busy = true
            return true
        }) {
            await turnEnded.wait(for: .seconds(1))
        }
        defer {
            busy.withLock { $0 = false }
            turnEnded.fire()
        }
        service.pruneDeliveredIfDue()
        var decisions: [String: String] = [:]
        let conditions = service.conditions()
        guard let apps = try? service.engine.installedApps() else { return decisions }
        for app in apps {
            guard let schedule = try? service.engine.schedule(app.appIdentifier) else { continue }
            let now = service.clock.now
            switch policy.decide(schedule, conditions: conditions, now: now) {
            case .notDue:
                continue
            case .skip(let reason):
                decisions[app.appIdentifier] = "skipped: \(reason)"
                try? service.engine.updateSchedule(app.appIdentifier) { $0.lastDecision = "skipped: \(reason)" }
            case .run:
                decisions[app.appIdentifier] = "ran"
                try? service.engine.updateSchedule(app.appIdentifier) { schedule in
                    schedule.lastPeriodic = now
                    schedule.nextPeriodic = policy.next(after: now, launches: schedule.launches)
                    schedule.lastDecision = "ran at \(ISO8601DateFormatter().string(from: now))"
                }
                do {
                    // A managed app's periodic request checks its packs for updates.
                    if app.hasManagedAssetPacks {
                        _ = try await service.engine.packRequest(.periodic, appIdentifier: app.appIdentifier)
                    } else {
                        _ = try await service.engine.contentRequest(.periodic, appIdentifier: app.appIdentifier)
                    }
                } catch {
                    service.logger.error("periodic request failed: \(error)", metadata: ["app": "\(app.appIdentifier)"])
                }
            }
        }
        return decisions
    }
}
