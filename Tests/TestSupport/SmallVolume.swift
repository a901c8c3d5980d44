import Foundation

/// A small volume of its own for a test (a tmpfs: root), to fill or to hold to a storage floor; unmounted by
/// `unmount` (lazily: a daemon may still hold a file there).
public struct SmallVolume: Sendable {
    public let url: URL

    public init(megabytes: Int) throws {
        url = TestPlugins.scratch.appendingPathComponent("small-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let mount = try Bahost.run(
            ["-c", "mount -t tmpfs -o size=\(megabytes)m tmpfs '\(url.path)'"], executable: "/bin/sh")
        guard mount.status == 0 else { throw LabFailure("cannot mount a tmpfs: \(mount)") }
    }

    public func unmount() { _ = try? Bahost.run(["-c", "umount -l '\(url.path)'"], executable: "/bin/sh") }
}
