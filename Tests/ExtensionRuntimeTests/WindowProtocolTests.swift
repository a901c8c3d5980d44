import CBAExtension
import Foundation
@testable import ExtensionRuntime
import Testing
import Vocabulary

/// The window's protocol as a value, without a process: what each packet means in each state, when willTerminate
/// and the kill are due, what a window keeps and why it ended. The tests that run real extensions (misbehaving,
/// sandbox, runner failure) prove the driver carries these decisions out.
@Suite struct WindowProtocolTests {
    let start = ContinuousClock.now
    let limits = WindowLimits(budget: .seconds(30), grace: .seconds(2), memoryBytes: 128 << 20)
    let info = AppExtensionInfo(restrictedDownloadSizeRemaining: nil, restrictedEssentialDownloadSizeRemaining: nil)

    func download(_ identifier: String) -> Download {
        Download(
            kind: .url, identifier: identifier, uniqueIdentifier: nil, url: "https://a.example/\(identifier)",
            applicationGroupIdentifier: "group.g", fileSize: 1)
    }

    func window(_ events: [WindowEvent], services: Bool = true) -> WindowProtocol {
        WindowProtocol(events: events, limits: limits, start: start, streamsReturned: false, hasServices: services)
    }

    func receive(_ window: inout WindowProtocol, _ message: RunnerMessage, after seconds: Double = 0)
        -> [WindowProtocol.Action]
    {
        window.receive(.success(message), at: start + .milliseconds(Int64(seconds * 1000)))
    }

    func names(_ actions: [WindowProtocol.Action]) -> [String] {
        actions.map {
            switch $0 {
            case .sendEvents: "sendEvents"
            case .sendWillTerminate: "willTerminate"
            case .sendEnd: "end"
            case .reply(_, .success): "reply ok"
            case .reply(_, .failure(let error)): "reply \(error.code)"
            case .perform: "perform"
            case .deliver: "deliver"
            case .deleteManifest: "deleteManifest"
            case .log: "log"
            case .kill: "kill"
            case .tryLock: "tryLock"
            case .releaseLock: "releaseLock"
            }
        }
    }

    @Test func aWindowWhoseEntryPointsReturnEndsAndKeepsWhatTheyReturned() {
        var window = window([.contentRequest(.install, manifestPath: "/m", info: info)])
        #expect(names(receive(&window, .hello(abiMajor: 1, abiMinor: 1, identifier: "x"))) == ["sendEvents"])
        #expect(names(receive(&window, .downloads(eventID: 1, [download("a"), download("b")]))).isEmpty)
        #expect(names(receive(&window, .eventDone(eventID: 1))) == ["deleteManifest"])
        #expect(names(window.endIfDone(at: start + .seconds(1))) == ["end"])
        let reason = window.reason(exitStatus: 0, killedByTheKernelForMemory: false)
        #expect(reason == .returned)
        let outcome = window.outcome(reason: reason, elapsed: .seconds(1), peakResidentBytes: 0, log: [])
        #expect(outcome.returnedDownloads.map(\.identifier) == ["a", "b"])
        #expect(outcome.completedEvents == 1)
    }

    @Test func theDeadlineSendsWillTerminateThenTheGraceKills() {
        var window = window([.contentRequest(.periodic, manifestPath: "/m", info: info)])
        _ = receive(&window, .hello(abiMajor: 1, abiMinor: 1, identifier: nil))
        #expect(names(window.tick(at: start + .seconds(29), memory: nil)).isEmpty)
        #expect(window.nextWakeUp(after: start + .seconds(29)) <= start + .seconds(29) + WindowProtocol.samplingPeriod)
        #expect(names(window.tick(at: start + .seconds(30), memory: nil)) == ["willTerminate"])
        #expect(names(window.tick(at: start + .seconds(31), memory: nil)).isEmpty)
        #expect(names(window.tick(at: start + .seconds(32), memory: nil)) == ["kill"])
        #expect(window.reason(exitStatus: 9, killedByTheKernelForMemory: false) == .budgetExceeded(willTerminateReturned: false))
        // What an entry point that never returned added is not kept.
        #expect(window.outcome(reason: .returned, elapsed: .seconds(32), peakResidentBytes: 0, log: []).returnedDownloads.isEmpty)
    }

    @Test func willTerminateThatReturnsEndsTheWindowAtOnce() {
        var window = window([.contentRequest(.periodic, manifestPath: "/m", info: info)])
        _ = receive(&window, .hello(abiMajor: 1, abiMinor: 1, identifier: nil))
        // Reported before anyone sent it: the extension is lying.
        var liar = window
        #expect(names(receive(&liar, .terminateDone)) == ["kill"])
        #expect(liar.stopReason == .protocolViolation("the extension reported a willTerminate nobody sent"))
        _ = window.tick(at: start + .seconds(30), memory: nil)
        #expect(names(receive(&window, .terminateDone, after: 30.5)) == ["kill"])
        #expect(window.stopReason == .budgetExceeded(willTerminateReturned: true))
    }

    @Test func aBrokenProtocolKillsAndKeepsNothing() {
        var window = window([
            .contentRequest(.install, manifestPath: "/m", info: info), .downloadFinished(download("f"), filePath: "/f"),
        ])
        _ = receive(&window, .hello(abiMajor: 1, abiMinor: 1, identifier: nil))
        _ = receive(&window, .downloads(eventID: 1, [download("a")]))
        _ = receive(&window, .eventDone(eventID: 1))
        // A download returned from the wrong entry point.
        #expect(names(receive(&window, .downloads(eventID: 2, [download("b")]))) == ["kill"])
        // Nothing more is heard once stopped.
        #expect(names(receive(&window, .eventDone(eventID: 2))).isEmpty)
        let reason = window.reason(exitStatus: 9, killedByTheKernelForMemory: false)
        #expect(reason == .protocolViolation("the extension returned a download outside downloads(for:…)"))
        #expect(window.outcome(reason: reason, elapsed: .seconds(1), peakResidentBytes: 0, log: []).returnedDownloads.isEmpty)
        var second = self.window([.contentRequest(.install, manifestPath: "/m", info: info)])
        _ = receive(&second, .hello(abiMajor: 1, abiMinor: 1, identifier: nil))
        #expect(names(receive(&second, .hello(abiMajor: 1, abiMinor: 1, identifier: nil))) == ["kill"])
    }

    @Test func hostCallsTheWindowAnswersItself() {
        var window = window([.contentRequest(.install, manifestPath: "/m", info: info), .downloadFinished(download("f"), filePath: "/f")])
        _ = receive(&window, .hello(abiMajor: 1, abiMinor: 1, identifier: nil))
        // Apple refuses scheduling inside downloads(for:…) (50), and startForeground in an extension always (50).
        #expect(names(receive(&window, .call(id: 1, .schedule(download("s"))))) == ["reply 50"])
        #expect(names(receive(&window, .call(id: 2, .startForeground(download("s"))))) == ["reply 50"])
        _ = receive(&window, .eventDone(eventID: 1))
        // Outside it, scheduling is the host's.
        #expect(names(receive(&window, .call(id: 3, .schedule(download("s"))))) == ["perform"])
        #expect(window.refused.map(\.function) == ["scheduleDownload", "startForegroundDownload"])
        // Without the host's services: 56.
        var bare = self.window([.downloadFinished(download("f"), filePath: "/f")], services: false)
        _ = receive(&bare, .hello(abiMajor: 1, abiMinor: 1, identifier: nil))
        #expect(names(receive(&bare, .call(id: 1, .cancel(download("s"))))) == ["reply 56"])
    }

    @Test func exclusiveControlWaitsItsTimeThenFailsAndHoldsTheWindowOpen() {
        var window = window([.downloadFinished(download("f"), filePath: "/f")])
        _ = receive(&window, .hello(abiMajor: 1, abiMinor: 1, identifier: nil))
        #expect(names(receive(&window, .call(id: 1, .acquireExclusiveControl(timeoutMilliseconds: 100)))) == ["tryLock"])
        #expect(names(window.lockTried(.success(false), at: start + .milliseconds(50))).isEmpty)
        #expect(names(window.lockTried(.success(false), at: start + .milliseconds(100))) == ["reply \(EWOULDBLOCK)"])
        // Held, the window stays open after its entry points returned, until the lock is given back.
        #expect(names(receive(&window, .call(id: 2, .acquireExclusiveControl(timeoutMilliseconds: -1)))) == ["tryLock"])
        #expect(names(window.lockTried(.success(true), at: start + .milliseconds(120))) == ["reply ok"])
        _ = receive(&window, .eventDone(eventID: 1))
        #expect(names(window.endIfDone(at: start + .seconds(1))).isEmpty)
        #expect(names(receive(&window, .call(id: 3, .releaseExclusiveControl))) == ["releaseLock", "reply ok"])
        #expect(names(window.endIfDone(at: start + .seconds(1))) == ["end"])
    }

    @Test func memoryOverTheLimitOrAKernelKillStopsTheWindow() {
        var window = window([.downloadFinished(download("f"), filePath: "/f")])
        #expect(window.wantsSample(at: start))
        let small = WindowProtocol.MemorySample(residentBytes: 1 << 20, killedByTheKernel: false, cgroupPeakBytes: nil)
        #expect(names(window.tick(at: start, memory: small)).isEmpty)
        #expect(!window.wantsSample(at: start + .milliseconds(1)))
        let large = WindowProtocol.MemorySample(residentBytes: 200 << 20, killedByTheKernel: false, cgroupPeakBytes: nil)
        #expect(names(window.tick(at: start + .milliseconds(10), memory: large)) == ["kill"])
        #expect(window.stopReason == .killedForMemory(limitBytes: 128 << 20))
        #expect(window.peakResident == 200 << 20)
        let killed = self.window([.downloadFinished(download("f"), filePath: "/f")])
        #expect(killed.reason(exitStatus: 9, killedByTheKernelForMemory: true) == .killedForMemory(limitBytes: 128 << 20))
    }

    @Test func whatTheCallerTakesAsItArrivesMovesTheDeadlineByTheHostsTime() {
        var window = WindowProtocol(
            events: [.contentRequest(.install, manifestPath: "/m", info: info)], limits: limits, start: start,
            streamsReturned: true, hasServices: true)
        _ = receive(&window, .hello(abiMajor: 1, abiMinor: 1, identifier: nil))
        #expect(names(receive(&window, .downloads(eventID: 1, [download("a")]))) == ["deliver"])
        window.hostTook(.seconds(5))
        #expect(window.deadline == start + .seconds(35))
        #expect(names(window.tick(at: start + .seconds(31), memory: nil)).isEmpty)
    }
}
