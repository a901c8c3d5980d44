import Engine
import HostVocabulary
import SystemBus

/// Tells an engine what the system bus says (`SystemBusWatch`): NetworkManager's connectivity and metered state, and
/// logind's sleep, before which the engine stops its transfers and syncs their files while the watch's delay
/// inhibitor holds the sleep back. Used by the service and by `bahost run`.
public enum EngineOnSystemBus {
    /// Starts the watch; nil, after logging why, without a system bus, which is no error: the kernel's routes then
    /// say alone where the network is. `log` is called on the watch's thread or a task. Stop the watch before the
    /// engine shuts down. `quietWithoutBus`: say nothing when there is none (a one-off `bahost run`).
    /// `power` hears UPower's and power-profiles-daemon's news (the service's person rules), on the watch's thread.
    public static func follow(
        _ engine: HostEngine, quietWithoutBus: Bool = false, power: @escaping @Sendable (PowerState) -> Void = { _ in },
        log: @escaping @Sendable (String) -> Void
    ) -> SystemBusWatch? {
        let handlers = SystemBusWatch.Handlers(
            networkChanged: { conditions in
                log("NetworkManager: connectivity \(conditions.connectivity), metered \(conditions.metered)")
                engine.networkConditionsChanged(to: conditions)
            },
            sleep: { goingToSleep, release in
                guard goingToSleep else {
                    log("the machine woke: transfers resume")
                    engine.resumedFromSleep()
                    return
                }
                Task {
                    let stopped = await engine.prepareForSleep()
                    log("the machine is going to sleep: \(stopped) transfers stopped, their files synced")
                    release()
                }
            },
            powerChanged: { state in
                log("power: on battery \(state.onBattery.map { "\($0)" } ?? "unknown"), battery "
                    + "\(state.batteryPercent.map { "\(Int($0)) %" } ?? "unknown"), power saver "
                    + "\(state.powerSaver.map { "\($0)" } ?? "unknown")")
                power(state)
            })
        switch SystemBusWatch.start(handlers: handlers) {
        case .success(let watch):
            return watch
        case .failure(let error):
            if !quietWithoutBus { log("no system bus (\(error)): NetworkManager and logind are not followed") }
            return nil
        }
    }
}
