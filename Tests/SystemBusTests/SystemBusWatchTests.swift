import Foundation
import HostVocabulary
import Synchronization
import SystemBus
import Testing
import TestSupport

/// The system bus's watch on its own, on a private bus (`SystemBusLab`: a real dbus-daemon, python3-dbusmock's
/// NetworkManager, logind and UPower): what it reports as the services change, its sleep inhibitor, and its thread's
/// end. `NetworkTests` has what the engine then does with each report.
@Suite(.ownThreads, .serialized, .enabled(if: SystemBusLab.unavailable == nil, "\(SystemBusLab.unavailable ?? "")"))
struct SystemBusWatchTests {
    /// What the watch reported, as it came.
    final class Reports: Sendable {
        let network = Mutex<[NetworkConditions]>([])
        let sleeps = Mutex<[Bool]>([])
        let power = Mutex<[PowerState]>([])
        let release = Mutex<(@Sendable () -> Void)?>(nil)

        var handlers: SystemBusWatch.Handlers {
            SystemBusWatch.Handlers(
                networkChanged: { conditions in self.network.withLock { $0.append(conditions) } },
                sleep: { going, release in
                    self.sleeps.withLock { $0.append(going) }
                    self.release.withLock { $0 = release }
                },
                powerChanged: { power in self.power.withLock { $0.append(power) } })
        }
    }

    /// NetworkManager's first state is reported at once, each change after it; once `stop` returns, the watch's
    /// thread has ended and nothing more is reported.
    @Test func theNetworkIsReportedUntilTheWatchIsStopped() async throws {
        let lab = try SystemBusLab(metered: 4)
        defer { lab.close() }
        let reports = Reports()
        let watch = try SystemBusWatch.start(handlers: reports.handlers, address: lab.address).get()
        #expect(reports.network.withLock { $0.last?.metered } == .guessNo)
        try lab.setMetered(1)
        #expect(try await eventually { reports.network.withLock { $0.last?.metered } == .yes })
        watch.stop()
        let count = reports.network.withLock { $0.count }
        try lab.setMetered(2)
        try await Task.sleep(for: .milliseconds(500))
        #expect(reports.network.withLock { $0.count } == count, "a report came after stop returned")
        watch.stop()  // once is enough; again changes nothing
    }

    /// A delay inhibitor is held while awake; logind's `PrepareForSleep(true)` is reported with a release that lets
    /// the inhibitor go (once the engine has saved its downloads), and waking takes it again.
    @Test func sleepIsReportedAndTheInhibitorHeldWhileAwake() async throws {
        let lab = try SystemBusLab()
        defer { lab.close() }
        let reports = Reports()
        let watch = try SystemBusWatch.start(handlers: reports.handlers, address: lab.address).get()
        defer { watch.stop() }
        #expect(watch.holdsInhibitor)
        try lab.prepareForSleep(true)
        #expect(try await eventually { reports.sleeps.withLock { $0 } == [true] })
        #expect(watch.holdsInhibitor, "released before the engine said so")
        reports.release.withLock { $0 }?()
        #expect(!watch.holdsInhibitor)
        try lab.prepareForSleep(false)
        #expect(try await eventually { reports.sleeps.withLock { $0 } == [true, false] && watch.holdsInhibitor })
    }

    /// UPower's battery is reported as it changes: on battery, and how full.
    @Test func theBatteryIsReported() async throws {
        let lab = try SystemBusLab(power: true)
        defer { lab.close() }
        let reports = Reports()
        let watch = try SystemBusWatch.start(handlers: reports.handlers, address: lab.address).get()
        defer { watch.stop() }
        #expect(reports.power.withLock { $0.last?.onBattery } == false)
        try lab.setBattery(onBattery: true, percent: 15)
        #expect(try await eventually {
            reports.power.withLock { $0.last.map { $0.onBattery == true && $0.batteryPercent == 15 } } == true
        })
    }

    /// No bus at the address: the watch does not start, and says what it tried.
    @Test func noBusIsAClearError() {
        let missing = "unix:path=/nonexistent/bahost-test-bus"
        guard case .failure(let error) = SystemBusWatch.start(handlers: Reports().handlers, address: missing) else {
            Issue.record("a watch started on no bus")
            return
        }
        #expect(error.description.hasPrefix("connecting to the system bus: "), "\(error)")
    }
}
