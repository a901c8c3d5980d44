import AppConfig
import Foundation
import ServiceWire
import Vocabulary

/// Where packages declare apps, and what each declared folder holds (docs/PACKAGING.md).
///
/// A package declares an app by a folder named after its `CFBundleIdentifier`, holding its Info.plist (with a
/// `CFBundleVersion`) and its extension, in `bahost/apps` of an XDG data folder: the user's own first
/// (`$XDG_DATA_HOME`, `~/.local/share`: a user install, a Steam game), then the system's (`$XDG_DATA_DIRS`,
/// `/usr/local/share:/usr/share`: a `.deb` puts it in `/usr/share/bahost/apps`). A Flatpak declares itself in the
/// files Flatpak installed, `files/share/bahost/APP_ID` of its deployment, in the user's and the system's Flatpak
/// installations (`app/APP_ID/current/active/files/…`), which nothing in its sandbox can write; only a folder named
/// after the Flatpak's own ID counts. The first folder of an app wins, the Flatpaks' last.
public struct DeclaredAppFolders: Sendable {
    /// The `bahost/apps` folders, in precedence order.
    public let roots: [String]
    /// Flatpak installations (`~/.local/share/flatpak`, `/var/lib/flatpak`), in precedence order.
    public let flatpakInstallations: [String]
    /// The user's home folder, where each Flatpak app's own folder is (`~/.var/app/APP_ID`).
    public let home: String

    public init(roots: [String], flatpakInstallations: [String] = [], home: String = NSHomeDirectory()) {
        self.roots = roots
        self.flatpakInstallations = flatpakInstallations
        self.home = home
    }

    /// The most entries a declared folder's fingerprint reads, and how deep: a folder is a package's few files.
    static let maximumEntries = 256
    static let maximumDepth = 4
    /// The most Flatpak apps read in one installation: a machine has tens to hundreds.
    static let maximumFlatpaks = 4096

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
        // Flatpak's own defaults, and the variables it reads to move them.
        let installations = [
            environment["FLATPAK_USER_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "\(dataHome)/flatpak",
            environment["FLATPAK_SYSTEM_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/var/lib/flatpak",
        ]
        return DeclaredAppFolders(roots: roots, flatpakInstallations: installations, home: home)
    }

    /// The folders whose changes say an app was declared, changed or removed: each root, and each Flatpak
    /// installation's `app` folder.
    var watchedRoots: [String] { roots + flatpakInstallations.map { "\($0)/app" } }

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
        for installation in flatpakInstallations {
            let apps = "\(installation)/app"
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: apps)) ?? []).sorted()
            for name in names.prefix(Self.maximumFlatpaks) where FlatpakInfo.isApplicationID(name) {
                // `current` names the branch in use, `active` its deployment: links Flatpak replaces at an update.
                // The app is installed from the deployment they reach, so that an update is a new folder (and so
                // the app's update, whatever its CFBundleVersion) and a window never loads a file being replaced.
                let declared = "\(apps)/\(name)/current/active/files/share/bahost/\(name)"
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: declared, isDirectory: &isDirectory),
                    isDirectory.boolValue
                else { continue }
                var observed = Self.observe(Self.resolved(declared), name: name)
                observed.sandboxHome = "\(home)/.var/app/\(name)"
                observed.watched = ["\(apps)/\(name)", Self.resolved("\(apps)/\(name)/current")]
                found.append(observed)
            }
        }
        return found
    }

    /// The path with its links resolved, or the path when it cannot be.
    static func resolved(_ path: String) -> String {
        guard let real = realpath(path, nil) else { return path }
        defer { free(real) }
        return String(cString: real)
    }

    /// One folder: its fingerprint, and whether it is an app the service can install.
    static func observe(_ folder: String, name: String) -> ObservedAppFolder {
        var observed = ObservedAppFolder(appIdentifier: name, folder: folder, fingerprint: fingerprint(folder))
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
