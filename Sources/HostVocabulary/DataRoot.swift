import Foundation

/// Where the host keeps everything, under one folder on one file system (so that finishing a file is a rename):
///
///     queue.sqlite                                   the durable queue
///     transfers/UNIQUE-ID.part                       bytes still arriving (names: Queue's `DataRoot.fileName`)
///     containers/APP-GROUP/Library/Caches/BackgroundAssets/UNIQUE-ID
///                                                    finished files, handed to the app or extension to move
///     containers/APP-GROUP/Library/Application Support/BackgroundAssets/AssetPacks/PACK-ID/…
///                                                    a managed app's installed asset packs
///
/// Every path is built with `isDirectory` given: without it, Foundation asks the disk (a `stat` per finished file).
///
/// The default is `$XDG_DATA_HOME/bahost` (`~/.local/share/bahost`): an app group container is per-user data.
public struct DataRoot: Sendable, Hashable {
    public let url: URL
    /// `url`'s path: the layout's paths are joined to it as text, in one place each, and their URLs made from
    /// those, since `URL`'s appending checks and re-encodes each component (a transfer builds several).
    private let path: String

    public init(_ path: String) {
        url = URL(fileURLWithPath: path, isDirectory: true)
        self.path = url.path
    }

    public static var standard: DataRoot {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty { return DataRoot("\(xdg)/bahost") }
        return DataRoot(FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share/bahost").path)
    }

    public var queuePath: String { url.appendingPathComponent("queue.sqlite", isDirectory: false).path }
    public var transfers: URL { URL(fileURLWithPath: transfersPath, isDirectory: true) }
    /// `transfers`' path, made as text.
    public var transfersPath: String { "\(path)/transfers" }

    /// The app group's container: the folder the app and its extension share.
    public func container(for appGroupIdentifier: String) -> URL {
        URL(fileURLWithPath: containerPath(for: appGroupIdentifier), isDirectory: true)
    }

    private func containerPath(for appGroupIdentifier: String) -> String { "\(path)/containers/\(appGroupIdentifier)" }

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
