import Foundation
import Synchronization
import Testing
import TestSupport

/// An app whose manifest, served by the lab, names one essential download of `size` bytes on `/slow/`.
struct LabApp {
    let infoPlist: String
    let dataRoot: URL
    let body: Data
    let path: String
    /// Each asset's path on the lab's server, by identifier.
    let paths: [String: String]

    /// - Parameter sparse: a file of zeros made without writing it (a large one), not on `/slow/`, in the
    ///   background (optional).
    init(_ lab: NetworkLab, size: Int, sparse: Bool = false) throws {
        let dir = sparse ? "fast/\(UUID().uuidString)" : "slow/\(UUID().uuidString)"
        let path = "\(dir)/level.pack"
        let url: String
        let body: Data
        if sparse {
            body = Data()
            url = try lab.serve(Data(), at: path)
            try FileHandle(forWritingTo: lab.root.appendingPathComponent(path)).truncate(atOffset: UInt64(size))
        } else {
            body = Data.random(count: size)
            url = try lab.serve(body, at: path)
        }
        let kind = sparse ? "optional" : "essential"
        try self.init(
            lab, manifest: "level \(size) \(kind) \(url)\n", in: dir, body: body, path: path, paths: ["level": path])
    }

    /// An app whose manifest names `assets`, each on `/slow/`: (identifier, size, the example extension's necessity
    /// word, such as `optional` or `essential,avoids-expensive`).
    init(_ lab: NetworkLab, assets: [(String, Int, String)]) throws {
        let dir = "slow/\(UUID().uuidString)"
        var manifest = ""
        var paths: [String: String] = [:]
        for (identifier, size, necessity) in assets {
            let path = "\(dir)/\(identifier).pack"
            paths[identifier] = path
            manifest += "\(identifier) \(size) \(necessity) \(try lab.serve(Data.random(count: size), at: path))\n"
        }
        try self.init(lab, manifest: manifest, in: dir, body: Data(), path: paths.values.sorted()[0], paths: paths)
    }

    private init(_ lab: NetworkLab, manifest: String, in dir: String, body: Data, path: String, paths: [String: String]) throws {
        self.body = body
        self.path = path
        self.paths = paths
        let manifest = try lab.serve(Data(manifest.utf8), at: "\(dir)/manifest.txt")
        dataRoot = TestPlugins.scratch.appendingPathComponent("data-\(UUID().uuidString)")
        let values: [String: Any] = [
            "CFBundleIdentifier": "com.example.levels", "BAAppGroupID": "group.com.example.levels",
            "BAManifestURL": manifest,
            "BAInitialDownloadRestrictions": [
                "BADownloadAllowance": 100_000_000, "BAEssentialDownloadAllowance": 100_000_000,
                "BADownloadDomainAllowList": [NetworkLab.host],
            ] as [String: Any],
            "BAMaxInstallSize": 100_000_000,
        ]
        let data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
        infoPlist = TestPlugins.scratch.appendingPathComponent("\(UUID().uuidString)-Info.plist").path
        try data.write(to: URL(fileURLWithPath: infoPlist))
    }

    /// Bytes of the download on disk so far (its partial file), 0 before it starts.
    var partialBytes: Int {
        let folder = dataRoot.appendingPathComponent("transfers").path
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).reduce(0) { sum, name in
            sum + ((try? FileManager.default.attributesOfItem(atPath: "\(folder)/\(name)")[.size] as? Int) ?? 0)
        }
    }
}

/// Starts `bahost run` for `app`'s install in the lab's client namespace.
func start(
    _ lab: NetworkLab, _ app: LabApp, _ extra: [String], environment: [String: String] = [:], event: String = "install"
) throws -> (process: Process, out: Pipe, err: Pipe) {
    let (executable, arguments) = lab.command(TestPlugins.bahost, [
        "run", "--plugin", try TestPlugins.c("example_extension"), "--event", event, "--info-plist", app.infoPlist,
        "--data-root", app.dataRoot.path, "--ca-file", lab.caFile, "--json",
    ] + extra)
    // No system bus but the test's own (`SystemBusLab`): the machine's NetworkManager must not decide a test.
    let noBus = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(lab.folder.appendingPathComponent("no-system-bus").path)"]
    return try Bahost.start(arguments, environment: noBus.merging(environment) { $1 }, executable: executable)
}

/// Waits until `condition` holds, for at most `seconds`; false if it never did.
func wait(_ seconds: Double, until condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else { return false }
        usleep(20_000)
    }
    return true
}

/// The run's result, or a failure once `seconds` passed (the run is then killed: a download that waited out a
/// timeout it should not have).
func finish(_ run: (process: Process, out: Pipe, err: Pipe), within seconds: Double) -> Bahost.Result? {
    Bahost.finish(run, within: seconds)
}
