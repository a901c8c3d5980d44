import Foundation
import PackAuthoring
import Packs
import Testing
import TestSupport

/// A managed app's packs through the swarm (docs/PEERS.md), against a real daemon and nginx on loopback: with
/// nobody else on the network, the CDN serves as the web seed, every block checked against the manifest's root.
/// The app's consent and the person's setting each keep an archive out of the swarm. (Machines sharing with each
/// other: Tests/Peers/lan.sh, in network namespaces.)
@Suite(.ownThreads) struct PeerSharingTests {
    let nginx = Nginx.shared
    let dir = "peers-\(UUID().uuidString.prefix(8))"
    let work = TestPlugins.scratch.appendingPathComponent("peers-\(UUID().uuidString.prefix(8))")

    /// Publishes an essential pack of `size` random bytes, with its download manifest; returns the archive's bytes.
    func publishEssentialPack(size: Int) throws -> Data {
        let source = work.appendingPathComponent("levels")
        try FileManager.default.createDirectory(
            at: source.appendingPathComponent("levels"), withIntermediateDirectories: true)
        try Data.random(count: size).write(to: source.appendingPathComponent("levels/blob.bin"))
        let policy = #"{"essential":{"installationEventTypes":["firstInstallation"]}}"#
        try Data(#"{"assetPackID":"levels","downloadPolicy":\#(policy),"fileSelectors":[{"directory":"levels"}]}"#.utf8)
            .write(to: source.appendingPathComponent("Manifest.json"))
        let archive = source.appendingPathComponent("levels.tar.zst").path
        try PackArchive.package(manifestPath: source.appendingPathComponent("Manifest.json").path, output: archive)
        let manifest = try DownloadManifest.create(
            archives: [archive], baseURL: nginx.https("\(dir)/packs"), previous: nil)
        #expect(manifest.assetPacks.first?.bittorrent != nil, "the manifest carries no BitTorrent hashes")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: archive))
        _ = try nginx.serve(bytes, at: "\(dir)/packs/levels")
        _ = try nginx.serve(try manifest.encoded(), at: "\(dir)/download-manifest.json")
        return bytes
    }

    /// A daemon whose session listens on loopback, trusting the tests' CA for the web seed too (libtorrent checks
    /// an https web seed against OpenSSL's store, which `SSL_CERT_FILE` names).
    func daemon(dataRoot: URL? = nil) throws -> ServiceDaemon {
        try ServiceDaemon(
            dataRoot: dataRoot, extra: ["--peer-listen", "127.0.0.1:0", "--peer-stall-seconds", "20"],
            environment: ["SSL_CERT_FILE": nginx.caFile])
    }

    func app(shares: Bool) throws -> TestApp {
        try TestApp(
            manifestURL: nginx.https("\(dir)/download-manifest.json"), plugin: TestPlugins.swiftExample,
            managedAssetPacks: true, otherKeys: shares ? ["BAHostSharesWithPeers": true] : [:])
    }

    func installedBlob(_ app: TestApp, _ daemon: ServiceDaemon) -> Data? {
        FileManager.default.contents(atPath: app.container(in: daemon.dataRoot).appendingPathComponent(
            "Library/Application Support/BackgroundAssets/AssetPacks/levels/levels/blob.bin").path)
    }

    /// The archives the daemon serves: `peers/ROOT/NAME`, each whole.
    func served(_ daemon: ServiceDaemon) -> [String] {
        let peers = daemon.dataRoot.appendingPathComponent("peers")
        let roots = (try? FileManager.default.contentsOfDirectory(atPath: peers.path)) ?? []
        return roots.flatMap { root in
            ((try? FileManager.default.contentsOfDirectory(atPath: peers.appendingPathComponent(root).path)) ?? [])
                .map { "\(root)/\($0)" }
        }
    }

    @Test func aSharedPackComesThroughTheSwarmAndIsServedAfter() throws {
        let archive = try publishEssentialPack(size: 3 << 20)
        let daemon = try daemon()
        #expect(try daemon.bahost(["settings", "set", "peers.share", "any"]).status == 0)
        let app = try app(shares: true)

        let install = try daemon.report(["install", app.folder.path])
        #expect(install.status == 0, "\(install.report)")
        let peers = install.events.first { $0["event"] as? String == "peers" }
        #expect(peers?["fellBack"] == nil, "\(peers ?? [:])")
        #expect((peers?["fromWebSeed"] as? Int ?? 0) >= archive.count, "\(peers ?? [:])")
        #expect(peers?["fromPeers"] as? Int == 0)
        #expect(installedBlob(app, daemon)?.count == 3 << 20)

        // The delivered archive is gone into the pack; the peers' folder keeps it, whole, to serve.
        let folder = try #require(served(daemon).first { !$0.hasSuffix("/.whole") }, "\(served(daemon))")
        #expect(folder.hasSuffix("/levels"))
        #expect(served(daemon).contains { $0.hasSuffix("/.whole") })
        let kept = FileManager.default.contents(atPath: daemon.dataRoot.appendingPathComponent("peers/\(folder)").path)
        #expect(kept == archive)
        let downloads = try daemon.downloads(app.identifier)
        let figures = downloads["levels"]?["peers"] as? [String: Any]
        #expect((figures?["fromWebSeed"] as? Int ?? 0) >= archive.count, "\(downloads)")
        let status = try daemon.report(["debug", "status"]).report["peers"] as? [String: Any]
        #expect(status?["share"] as? String == "any" && status?["running"] as? Bool == true, "\(status ?? [:])")
        #expect(status?["served"] as? Int == 1 && (status?["fromWebSeed"] as? Int ?? 0) >= archive.count)
    }

    @Test func anAppThatDidNotAllowSharingNeverGoesThroughTheSwarm() throws {
        _ = try publishEssentialPack(size: 1 << 20)
        let daemon = try daemon()
        #expect(try daemon.bahost(["settings", "set", "peers.share", "any"]).status == 0)
        let app = try app(shares: false)

        let install = try daemon.report(["install", app.folder.path])
        #expect(install.status == 0, "\(install.report)")
        #expect(!install.events.contains { $0["event"] as? String == "peers" })
        #expect(installedBlob(app, daemon)?.count == 1 << 20)
        #expect(served(daemon).isEmpty)
    }

    /// On a small volume (a 64 MiB tmpfs) with a floor of half of it, a 40 MiB essential archive fails for want of
    /// space before the swarm writes a byte, as its HTTP transfer would.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root (CI runs the tests as root)"))
    func theSwarmKeepsThePersonsStorageFloor() throws {
        _ = try publishEssentialPack(size: 40 << 20)
        let volume = try SmallVolume(megabytes: 64)
        defer { volume.unmount() }
        let daemon = try daemon(dataRoot: volume.url.appendingPathComponent("data"))
        defer { daemon.stop(SIGTERM) }
        #expect(try daemon.bahost(["settings", "set", "peers.share", "any"]).status == 0)
        #expect(try daemon.bahost(["settings", "set", "storage.floor-percent", "50"]).status == 0)
        let app = try app(shares: true)

        let install = try daemon.report(["install", app.folder.path])
        #expect(install.status != 0)
        let failures = install.report["essentialFailures"] as? [[String: Any]] ?? []
        #expect(failures.contains { ($0["error"] as? String)?.contains("not enough free space") == true },
            "\(install.report)")
        #expect(!install.events.contains { $0["event"] as? String == "peers" })
        #expect(served(daemon).isEmpty)
    }

    @Test func theSwarmReceivesNoFasterThanThePersonsCeiling() throws {
        let archive = try publishEssentialPack(size: 2 << 20)
        let daemon = try daemon()
        #expect(try daemon.bahost(["settings", "set", "peers.share", "any"]).status == 0)
        #expect(try daemon.bahost(["settings", "set", "rate.all", "512K"]).status == 0)
        let app = try app(shares: true)

        let start = Date()
        let install = try daemon.report(["install", app.folder.path])
        let took = Date().timeIntervalSince(start)
        #expect(install.status == 0, "\(install.report)")
        let peers = install.events.first { $0["event"] as? String == "peers" }
        #expect((peers?["fromWebSeed"] as? Int ?? 0) >= archive.count, "\(peers ?? [:])")
        // 2 MiB at 512 KiB/s: 4 s, less what libtorrent's first quota lets through at once.
        #expect(took >= 3, "2 MiB came through the swarm in \(took) s under rate.all 512K")
    }

    @Test func byDefaultAnUnpairedMachineSharesWithNobody() throws {
        _ = try publishEssentialPack(size: 1 << 20)
        let daemon = try daemon()
        let show = try daemon.bahost(["settings", "show"])
        #expect(show.stdout.contains("peers.share") && show.stdout.contains("own"), "\(show.stdout)")
        let app = try app(shares: true)

        let install = try daemon.report(["install", app.folder.path])
        #expect(install.status == 0, "\(install.report)")
        #expect(!install.events.contains { $0["event"] as? String == "peers" })
        #expect(served(daemon).isEmpty)
    }
}
