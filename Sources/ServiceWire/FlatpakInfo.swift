import Glibc
import Vocabulary

/// What a Flatpak instance's `.flatpak-info` says of it: the app it runs and the instance's identifier. Flatpak
/// writes the file (a GLib key file) on the host and mounts it read-only at the sandbox's `/.flatpak-info`; the
/// service reads it through a peer's `/proc/PID/root` (docs/PACKAGING.md, "Flatpak"), and the app library reads its
/// own to find the service's socket inside the sandbox.
///
/// Only two keys are read, from a file Flatpak wrote: `name` of `[Application]` and `instance-id` of `[Instance]`.
/// GLib's `GKeyFile` would bring GLib into the app library and the service for them, so this reader is the key
/// file's grammar as far as those keys need it (groups, `key=value`, comments), bounded, and it refuses what is not
/// an identifier.
public struct FlatpakInfo: Sendable, Hashable {
    /// The Flatpak application ID, which is the app's `CFBundleIdentifier` under bahost.
    public var appIdentifier: String
    /// The instance's identifier: the folder `$XDG_RUNTIME_DIR/.flatpak/INSTANCE` on the host.
    public var instance: String?

    public init(appIdentifier: String, instance: String?) {
        self.appIdentifier = appIdentifier
        self.instance = instance
    }

    /// The most bytes read of the file: Flatpak's are about 1 KiB.
    public static let maximumSize = 64 * 1024

    /// Reads the key file's text; nil when it names no valid application ID.
    public init?(parsing bytes: some Collection<UInt8>) {
        guard bytes.count <= Self.maximumSize else { return nil }
        var group = ""
        var name: String?
        var instance: String?
        for rawLine in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            let line = String(decoding: rawLine, as: UTF8.self)
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if trimmed.hasPrefix("[") {
                group = trimmed.hasSuffix("]") ? String(trimmed.dropFirst().dropLast()) : ""
                continue
            }
            guard let equals = trimmed.firstIndex(of: "=") else { continue }
            let key = trimmed[..<equals].trimmingTrailingSpaces
            let value = String(trimmed[trimmed.index(after: equals)...].drop { $0 == " " })
            switch (group, key) {
            case ("Application", "name") where name == nil: name = value
            case ("Instance", "instance-id") where instance == nil: instance = value
            default: break
            }
        }
        guard let name, Self.isApplicationID(name) else { return nil }
        if let found = instance, found.isEmpty || !found.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) { instance = nil }
        self.init(appIdentifier: name, instance: instance)
    }

    /// Flatpak's rule for an application ID: at least three elements separated by dots, each of letters, digits,
    /// `_` and `-` (not beginning with a digit), 255 bytes at most.
    public static func isApplicationID(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 255 else { return false }
        let elements = text.split(separator: ".", omittingEmptySubsequences: false)
        guard elements.count >= 3 else { return false }
        return elements.allSatisfy { element in
            guard let first = element.utf8.first, !(48...57).contains(first) else { return false }
            return element.utf8.allSatisfy { byte in
                (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == 95
                    || byte == 45
            }
        }
    }

    /// This process's own Flatpak, when it runs inside one: `$FLATPAK_ID`, else `/.flatpak-info`; nil outside.
    public static var current: FlatpakInfo? {
        if let id = ProcessEnvironment.value("FLATPAK_ID"), isApplicationID(id) {
            return FlatpakInfo(appIdentifier: id, instance: nil)
        }
        let descriptor = open("/.flatpak-info", O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return read(descriptor)
    }

    /// Reads an open `.flatpak-info`: a regular file of at most `maximumSize` bytes.
    public static func read(_ descriptor: Int32) -> FlatpakInfo? {
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= maximumSize else {
            return nil
        }
        var bytes = [UInt8](repeating: 0, count: maximumSize + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            count += got
        }
        return FlatpakInfo(parsing: bytes[..<count])
    }
}

extension ServiceProtocol {
    /// Where an app finds the service: `$BAHOST_SOCKET`; inside a Flatpak, the socket the service keeps in the
    /// app's own `$XDG_RUNTIME_DIR/app/APP_ID` (which Flatpak shows the sandbox with no permission asked);
    /// else `defaultSocketPath`.
    public static var appSocketPath: String {
        if let path = ProcessEnvironment.value("BAHOST_SOCKET"), !path.isEmpty { return path }
        if let flatpak = FlatpakInfo.current {
            let runtime = ProcessEnvironment.value("XDG_RUNTIME_DIR").flatMap { $0.isEmpty ? nil : $0 }
                ?? "/run/user/\(getuid())"
            return "\(runtime)/app/\(flatpak.appIdentifier)/\(flatpakSocketName)"
        }
        return defaultSocketPath
    }

    /// The name of the socket the service keeps in each Flatpak app's `$XDG_RUNTIME_DIR/app/APP_ID`.
    public static let flatpakSocketName = "bahost.sock"

    /// The app's identity when none is given: `$BAHOST_APP_IDENTIFIER` (`bahost launch`), else the Flatpak's own
    /// application ID.
    public static var defaultAppIdentifier: String? {
        if let given = ProcessEnvironment.value("BAHOST_APP_IDENTIFIER"), !given.isEmpty { return given }
        return FlatpakInfo.current?.appIdentifier
    }
}

extension Substring {
    fileprivate var trimmingTrailingSpaces: Substring {
        var end = endIndex
        while end > startIndex, self[index(before: end)] == " " || self[index(before: end)] == "\t" {
            end = index(before: end)
        }
        return self[startIndex..<end]
    }
}
