import AppConfig
import Foundation
import Vocabulary

/// Where packages declare apps, and what each declared folder holds (docs/PACKAGING.md).
///
/// A package declares an app by a folder named after its `CFBundleIdentifier`, holding its Info.plist (with a
/// `CFBundleVersion`) and its extension, in `bahost/apps` of an XDG data folder: the user's own first
/// (`$XDG_DATA_HOME`, `~/.local/share`: a user install, a Flatpak, a Steam game), then the system's
/// (`$XDG_DATA_DIRS`, `/usr/local/share:/usr/share`: a `.deb` puts it in `/usr/share/bahost/apps`). The first folder
/// of an app wins.
public struct DeclaredAppFolders: Sendable {
    /// The `bahost/apps` folders, in precedence order.
    public let roots: [String]

    public init(roots: [String]) { self.roots = roots }

    /// The most entries a declared folder's fingerprint reads, and how deep: a folder is a package's few files.
    static let maximumEntries = 256
    static let maximumDepth = 4

    /// The XDG folders of this user.
    public static func standard(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> DeclaredAppFolders
    {
        let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(home)/.local/share"
        let dataDirs = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        var roots: [String] = []
        for folder in [dataHome] + dataDirs where !roots.contains("\(folder)/bahost/apps") {
            roots.append("\(folder)/bahost/apps")
        }
        return DeclaredAppFolders(roots: roots)
    }

    /// Every app folder in the roots, in precedence order, each read and checked.
    func scan() -> [ObservedAppFolder] {
        var found: [ObservedAppFolder] = []
        for root in roots {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted()
            for name in names where !name.hasPrefix(".") {
                let folder = "\(root)/\(name)"
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue
                else { continue }
                found.append(Self.observe(folder, name: name))
            }
        }
        return found
    }

    /// One folder: its fingerprint, and whether it is an app the service can install.
    static func observe(_ folder: String, name: String) -> ObservedAppFolder {
        var observed = ObservedAppFolder(
            appIdentifier: name, folder: folder, version: nil, fingerprint: fingerprint(folder), problem: nil)
        do {
            let config = try AppConfiguration(contentsOf: URL(fileURLWithPath: "\(folder)/Info.plist"))
            guard config.appIdentifier == name else {
                observed.problem = "the folder is named \(name.printable(limit: 200)), not after the app's "
                    + "CFBundleIdentifier \(config.appIdentifier.printable(limit: 200))"
                return observed
            }
            guard let version = config.bundleVersion, !version.isEmpty else {
                observed.problem = "its Info.plist has no CFBundleVersion, which tells an update from what is installed"
                return observed
            }
            _ = try BackgroundAssetsService.extensionPath(in: URL(fileURLWithPath: folder), config: config)
            observed.version = version
        } catch let error as AppConfigurationError {
            observed.problem = error.description
        } catch let error as ControlError {
            observed.problem = error.message
        } catch {
            observed.problem = "\(error)"
        }
        return observed
    }

    /// Names, kinds, sizes and modification times of what the folder holds (symbolic links followed), bounded.
    static func fingerprint(_ folder: String) -> String {
        var lines: [String] = []
        var pending: [(path: String, depth: Int)] = [(folder, 0)]
        while let (path, depth) = pending.popLast(), lines.count < maximumEntries {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
            for name in names where lines.count < maximumEntries {
                let child = "\(path)/\(name)"
                var info = stat()
                guard stat(child, &info) == 0 else {
                    lines.append("\(child) gone")
                    continue
                }
                lines.append("\(child) \(info.st_mode) \(info.st_size) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)")
                if (info.st_mode & S_IFMT) == S_IFDIR && depth + 1 < maximumDepth { pending.append((child, depth + 1)) }
            }
        }
        return lines.joined(separator: "\n")
    }
}
