import ExtensionRuntime
import Foundation
import Engine
import Queue
import Synchronization

/// Sends `.periodic` content requests to launched apps on the cadence their usage earns, when the machine's
/// conditions and the app's runtime budget allow (`PeriodicPolicy`). Every decision is written to the app's
/// schedule before it is acted on, so that `bahost debug status` shows it and a killed service does not repeat it.
final class PeriodicScheduler: Sendable {
    let policy: PeriodicPolicy
    let interval: Duration
    private let wakeups = Mutex<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))
    /// One turn at a time: a turn woken by `bahost debug clock` waits for the one in progress.
    private let turns = AsyncTurnLock()

    init(policy: PeriodicPolicy, interval: Duration) {
        self.policy = policy
        self.interval = interval
    }

    func run(_ service: BackgroundAssetsService) async {
        while !Task.isCancelled {
            await turn(service)
            await sleep()
        }
    }

    private func sleep() async {
        let timer = Task { [interval] in
            try? await Task.sleep(for: interval)
            if !Task.isCancelled { self.wake() }
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let fired = wakeups.withLock { state -> Bool in
                    if state.fired || Task.isCancelled {
                        state.fired = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if fired { continuation.resume() }
            }
        } onCancel: {
            self.wake()
        }
        timer.cancel()
    }

    private func wake() {
        wakeups.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.fired = true
                return nil
            }
            state.waiter = nil
            return waiter
        }?.resume()
    }

    /// Looks at every app once; runs the periodic requests that are due. Returns what it decided, per app.
    @discardableResult
    func turn(_ service: BackgroundAssetsService) async -> [String: String] {
        await turns.run {
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
                        _ = try await service.engine.contentRequest(.periodic, appIdentifier: app.appIdentifier)
                    } catch {
                        service.logger.error("periodic request failed: \(error)", metadata: ["app": "\(app.appIdentifier)"])
                    }
                }
            }
            return decisions
        }
    }
}

/// Runs async bodies one at a time, in order.
final class AsyncTurnLock: Sendable {
    private let state = Mutex<(busy: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func run<T: Sendable>(_ body: () async -> T) async -> T {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if !state.busy {
                    state.busy = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        let result = await body()
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
        return result
    }
}
