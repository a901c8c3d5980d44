import Foundation
import Testing
import TestSupport

/// What the machine says of its network and of itself, on a private system bus with python3-dbusmock's
/// NetworkManager and logind (`SystemBusLab`), while `bahost run` downloads from the lab's server
/// (docs/DOWNLOADS.md, "Metered networks" and "Sleep"). Each asserts what happened to the downloads: which went,
/// which waited, from which byte each resumed, never how long it took.
@Suite(.ownThreads,
    .serialized, .enabled(if: NetworkLab.unavailable == nil, "\(NetworkLab.unavailable ?? "")"),
    .enabled(if: SystemBusLab.unavailable == nil, "\(SystemBusLab.unavailable ?? "")"))
struct SystemBusTests {
    /// On a metered network (NetworkManager's guess, a phone's hotspot) the essential download goes and the
    /// background one waits, visibly; it goes once the network is not metered.
    @Test func aMeteredNetworkHoldsBackgroundDownloadsAndLetsEssentialOnesGo() throws {
        let lab = try NetworkLab(rate: "4m")
        defer { lab.close() }
        let bus = try SystemBusLab(metered: 3)
        defer { bus.close() }
        let app = try LabApp(lab, assets: [("level", 256 << 10, "essential"), ("extras", 512 << 10, "optional")])
        let run = try start(lab, app, ["--max-attempts", "1"], environment: bus.environment)
        #expect(wait(30) { lab.requests(for: app.paths["level"]!).count == 1 }, "the essential download did not go")
        // Time for the background one to start, were it going to.
        usleep(2_000_000)
        #expect(lab.requests(for: app.paths["extras"]!).isEmpty)
        #expect(app.partialBytes == 0, "the background download started on a metered network")
        try bus.setMetered(4)
        let result = try #require(finish(run, within: 60), "the background download did not go once unmetered")

        #expect(result.status == 0, "\(result.stderr)")
        #expect(Set(result.events("finished").compactMap { $0["identifier"] as? String }) == ["level", "extras"])
        #expect(result.events("failed").isEmpty, "\(result.events("failed"))")
        #expect(result.stderr.contains("metered guessYes"), "\(result.stderr)")
        #expect(lab.requests(for: app.paths["extras"]!).count == 1)
    }

    /// A background download running when the network turns metered stops at once, keeping its bytes, and resumes
    /// from them once it is not: with one attempt in all, so the wait consumed none.
    @Test func aDownloadStoppedWhenTheNetworkTurnsMeteredResumesFromItsBytes() throws {
        let lab = try NetworkLab(rate: "1m")
        defer { lab.close() }
        let bus = try SystemBusLab(metered: 2)
        defer { bus.close() }
        let app = try LabApp(lab, assets: [("extras", 2 << 20, "optional")])
        let run = try start(lab, app, ["--max-attempts", "1", "--read-timeout", "600"], environment: bus.environment)
        #expect(wait(30) { app.partialBytes >= 256 << 10 }, "the download never got going")
        try bus.setMetered(1)
        #expect(wait(10) { lab.requests(for: app.paths["extras"]!).count == 1 }, "the transfer was not stopped")
        let kept = app.partialBytes
        usleep(1_500_000)
        #expect(app.partialBytes == kept, "bytes still arrive on a metered network")
        try bus.setMetered(2)
        let result = try #require(finish(run, within: 60), "the download did not resume")

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["extras"])
        let paused = result.events("paused").filter { $0["reason"] as? String == "waitingForNetwork" }
        #expect(!paused.isEmpty, "no pause was reported")
        let requests = lab.requests(for: app.paths["extras"]!)
        #expect(requests.count == 2, "\(requests)")
        #expect(requests.last?.contains("\"bytes=\(kept)-\"") == true, "resumed from \(kept): \(requests)")
    }

    /// A request that does not allow expensive networks waits on a metered one even when essential; another
    /// essential one goes. On a network the user marked metered (constrained), likewise.
    @Test func anEssentialDownloadThatAvoidsExpensiveNetworksWaits() throws {
        let lab = try NetworkLab(rate: "4m")
        defer { lab.close() }
        let bus = try SystemBusLab(metered: 1)
        defer { bus.close() }
        let app = try LabApp(lab, assets: [
            ("level", 256 << 10, "essential"), ("hd", 256 << 10, "essential,avoids-expensive"),
        ])
        let run = try start(lab, app, ["--max-attempts", "1"], environment: bus.environment)
        #expect(wait(30) { lab.requests(for: app.paths["level"]!).count == 1 }, "the essential download did not go")
        usleep(2_000_000)
        #expect(lab.requests(for: app.paths["hd"]!).isEmpty, "a download that avoids expensive networks used one")
        try bus.setMetered(2)
        let result = try #require(finish(run, within: 60))

        #expect(result.status == 0, "\(result.stderr)")
        #expect(Set(result.events("finished").compactMap { $0["identifier"] as? String }) == ["level", "hd"])
        #expect(lab.requests(for: app.paths["hd"]!).count == 1)
    }

    /// NetworkManager reporting no connectivity holds every download; connectivity returning lets them go.
    @Test func noConnectivityHoldsDownloadsUntilItReturns() throws {
        let lab = try NetworkLab(rate: "4m")
        defer { lab.close() }
        let bus = try SystemBusLab()
        defer { bus.close() }
        try bus.setConnectivity(1)
        let app = try LabApp(lab, assets: [("level", 256 << 10, "essential")])
        let run = try start(lab, app, ["--max-attempts", "1"], environment: bus.environment)
        usleep(3_000_000)
        #expect(lab.requests(for: app.paths["level"]!).isEmpty, "a download went with no connectivity")
        try bus.setConnectivity(4)
        let result = try #require(finish(run, within: 60))

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["level"])
        #expect(result.stderr.contains("connectivity none"), "\(result.stderr)")
    }

    /// bahost holds logind's delay inhibitor; before sleep it stops its transfers, syncs their files and lets the
    /// sleep go (the inhibitor released); after it, it takes the inhibitor again and the download resumes from its
    /// bytes, with one attempt in all.
    @Test func sleepStopsTransfersAndWakingResumesThem() throws {
        let lab = try NetworkLab(rate: "1m")
        defer { lab.close() }
        let bus = try SystemBusLab()
        defer { bus.close() }
        let app = try LabApp(lab, assets: [("level", 2 << 20, "essential")])
        let run = try start(lab, app, ["--max-attempts", "1", "--read-timeout", "600"], environment: bus.environment)
        #expect(wait(30) { app.partialBytes >= 256 << 10 }, "the download never got going")
        let inhibitors = try bus.inhibitors()
        #expect(inhibitors.contains("'bahost'"), "no inhibitor: \(inhibitors)")
        try bus.prepareForSleep(true)
        #expect(wait(5) { (try? bus.inhibitors().contains("'bahost'")) == false }, "the sleep was held past 5 s")
        let kept = app.partialBytes
        usleep(1_500_000)
        #expect(app.partialBytes == kept, "bytes still arrive after the machine went to sleep")
        try bus.prepareForSleep(false)
        #expect(wait(5) { (try? bus.inhibitors().contains("'bahost'")) == true }, "the inhibitor was not taken again")
        let result = try #require(finish(run, within: 60), "the download did not resume after the wake")

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.events("finished").compactMap { $0["identifier"] as? String } == ["level"])
        #expect(result.stderr.contains("going to sleep: 1 transfers stopped"), "\(result.stderr)")
        let requests = lab.requests(for: app.paths["level"]!)
        #expect(requests.count == 2, "\(requests)")
        #expect(requests.last?.contains("\"bytes=\(kept)-\"") == true, "resumed from \(kept): \(requests)")
    }
}
