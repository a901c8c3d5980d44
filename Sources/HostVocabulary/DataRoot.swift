import Foundation
import Synchronization

/// Where the host keeps everything, under one folder on one file system (so that finishing a file is a rename):
///
///     queue.sqlite                                   the durable queue
///     transfers/UNIQUE-ID.part                       bytes still arriving (names: Queue's `DataRoot.fileName`)
///     containers/APP-GROUP/Library/Caches/BackgroundAssets/UNIQUE-ID
///                                                    finished files, handed to the app or extension to move
///     containers/APP-GROUP/Library/Application Support/BackgroundAssets/AssetPacks/PACK-ID/…
///                                                    a managed app's installed asset packs
///     peers/PIECES-ROOT/ARCHIVE                      a pack's archive shared with peers (a hard link to what was
///                                                    delivered, or what the swarm is filling)
///
/// Every path is built with `isDirectory` given: without it, Foundation asks the disk (a `stat` per finished file).
///
/// The default is `$XDG_DATA_HOME/bahost` (`~/.local/share/bahost`): an app group container is per-user data.
///
/// A sandboxed (Flatpak) app's container is the exception: it lives in the folder its sandbox gives it,
/// `~/.var/app/APP_ID/data/bahost/containers/APP-GROUP`, at the same path inside the sandbox and out
/// (`SandboxHomes`). That folder must be on the data root's file system (it is, under one home folder).
public struct DataRoot: Sendable, Hashable {
    public let url: URL
    /// `url`'s path: the layout's paths are joined to it as text, in one place each, and their URLs made from
    /// those, since `URL`'s appending checks and re-encodes each component (a transfer builds several).
    private let path: String
    /// The sandboxed apps' own folders, shared by every copy of this value (the engine keeps it as apps are
    /// installed and uninstalled).
    public let sandboxHomes = SandboxHomes()

    public init(_ path: String) {
        url = URL(fileURLWithPath: path, isDirectory: true)
        self.path = url.path
    }

    public static func == (a: DataRoot, b: DataRoot) -> Bool { a.url == b.url }
    public func hash(into hasher: inout Hasher) { hasher.combine(url) }

    public static var standard: DataRoot {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty { return DataRoot("\(xdg)/bahost") }
        // `$HOME` first, as XDG says: the home a Flatpak's `~/.var/app` is under.
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? FileManager.default.homeDirectoryForCurrentUser.path
        return DataRoot("\(home)/.local/share/bahost")
    }

    public var queuePath: String { url.appendingPathComponent("queue.sqlite", isDirectory: false).path }
    public var transfers: URL { URL(fileURLWithPath: transfersPath, isDirectory: true) }
    /// `transfers`' path, made as text.
    public var transfersPath: String { "\(path)/transfers" }

    /// The archives shared with peers, one folder each, named by its BitTorrent pieces root (docs/PEERS.md).
    public var peersPath: String { "\(path)/peers" }

    /// The app group's container: the folder the app and its extension share.
    public func container(for appGroupIdentifier: String) -> URL {
        URL(fileURLWithPath: containerPath(for: appGroupIdentifier), isDirectory: true)
    }

    private func containerPath(for appGroupIdentifier: String) -> String {
        if let home = sandboxHomes.home(ofGroup: appGroupIdentifier) {
            return SandboxHomes.containerPath(for: appGroupIdentifier, in: home)
        }
        return "\(path)/containers/\(appGroupIdentifier)"
    }

    /// Where finished files wait for their completion to be delivered.
    public func deliveries(for appGroupIdentifier: String) -> URL {
        URL(fileURLWithPath: deliveriesPath(for: appGroupIdentifier), isDirectory: true)
    }

    /// `deliveries(for:)`' path, made as text.
    public func deliveriesPath(for appGroupIdentifier: String) -> String {
        "\(containerPath(for: appGroupIdentifier))/Library/Caches/BackgroundAssets"
    }

    /// Where a managed app's asset packs live, one folder per pack: the namespace `AssetPackManager` reads.
    public func assetPacks(for appGroupIdentifier: String) -> URL {
        container(for: appGroupIdentifier).appendingPathComponent("Library/Application Support/BackgroundAssets/AssetPacks", isDirectory: true)
    }

    /// A managed app's catalogue: the download manifest last fetched for it.
    public func packCatalogue(for appIdentifier: String) -> URL {
        url.appendingPathComponent("packs", isDirectory: true)
            .appendingPathComponent("\(appIdentifier).json", isDirectory: false)
    }

    /// Creates the folders; private to the user.
    public func prepare(appGroupIdentifier: String? = nil) throws {
        var folders = [url, transfers]
        if let appGroupIdentifier { folders.append(deliveries(for: appGroupIdentifier)) }
        for folder in folders {
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
    }
}

/// Which app groups belong to a sandboxed app, and the folder its sandbox gives it (Flatpak: `~/.var/app/APP_ID`):
/// the group's container lives there, where the app sees it without a permission, and nowhere else.
public final class SandboxHomes: Sendable {
    private let homes = Mutex<(byGroup: [String: String], byApp: [String: String])>(([:], [:]))

    public init() {}

    /// [any thread] The app `appIdentifier`, whose group is `appGroupIdentifier`, lives in `home` (nil: natively).
    public func place(_ appIdentifier: String, group appGroupIdentifier: String, home: String?) {
        homes.withLock { homes in
            if let old = homes.byApp[appIdentifier] {
                homes.byGroup = homes.byGroup.filter { $0.value != old }
            }
            homes.byApp[appIdentifier] = home
            if let home { homes.byGroup[appGroupIdentifier] = home }
        }
    }

    /// [any thread] The sandboxed app's folder, or nil for a native app.
    public func home(ofApp appIdentifier: String) -> String? { homes.withLock { $0.byApp[appIdentifier] } }

    /// [any thread] The folder of the sandboxed app whose group this is, or nil.
    public func home(ofGroup appGroupIdentifier: String) -> String? {
        homes.withLock { $0.byGroup[appGroupIdentifier] }
    }

    /// Where bahost keeps a sandboxed app's files in its folder: `data/bahost`, the sandbox's `$XDG_DATA_HOME/bahost`.
    public static func bahostFolder(in home: String) -> String { "\(home)/data/bahost" }

    /// A sandboxed app's group container.
    public static func containerPath(for appGroupIdentifier: String, in home: String) -> String {
        "\(bahostFolder(in: home))/containers/\(appGroupIdentifier)"
    }
}
