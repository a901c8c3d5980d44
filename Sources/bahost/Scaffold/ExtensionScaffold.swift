import Foundation
import Vocabulary

/// The files of a new extension project, as `bahost new extension` writes them: what Xcode's Background Download
/// template gives an Apple developer, for a `.so` that bahost loads. Each template is in a file of its own
/// (`SwiftTemplate`, `CTemplate`, `AppTemplate`); this type holds what they share and picks them.
struct ExtensionScaffold {
    enum Language: String { case swift, c }

    /// Where a Swift project finds the bahost package: a released URL, or a local checkout.
    enum PackageLocation {
        case url(String)
        case path(String)

        /// The `.package(…)` line. A path dependency is named, so that `package: "bahost"` resolves whatever the
        /// checkout's folder is called (SwiftPM otherwise names it after the folder).
        var dependency: String {
            switch self {
            case .url(let url): return #".package(url: "\#(url)", from: "\#(BahostVersion.release)")"#
            case .path(let path): return #".package(name: "bahost", path: "\#(path)")"#
            }
        }
    }

    /// The product and target name: letters and digits, starting with a letter (a Swift type and a C identifier).
    let name: String
    let language: Language
    /// An app with `BAHasManagedAssetPacks`: the extension is a `ManagedDownloaderExtension`.
    let managed: Bool
    /// The app's `CFBundleIdentifier`; its app group is `group.` + this.
    let appIdentifier: String
    let package: PackageLocation

    var appGroup: String { "group.\(appIdentifier)" }
    /// The content manifest the extension reads: JSON in Swift; in C one asset a line, which needs no parser.
    var manifestFile: String { language == .swift ? "manifest.json" : "manifest.txt" }
    /// The shared object the build makes, relative to the project.
    var library: String { language == .swift ? ".build/debug/lib\(name).so" : "lib\(name).so" }

    /// Refuses a name that would not make a valid Swift type, C identifier and file name.
    static func validate(name: String) throws(ScaffoldError) {
        guard let first = name.unicodeScalars.first, name.count <= 64,
            CharacterSet.letters.contains(first), first.isASCII,
            name.unicodeScalars.allSatisfy({ $0.isASCII && CharacterSet.alphanumerics.contains($0) })
        else {
            throw ScaffoldError(
                "the name must be 1 to 64 ASCII letters and digits starting with a letter (it names a Swift type, "
                    + "a C identifier and the library), not '\(name.printable())'")
        }
    }

    /// Every file, by path relative to the project's folder.
    func files() -> [(path: String, contents: String)] {
        let app = AppTemplate(scaffold: self)
        var files: [(String, String)] = [
            ("Info.plist", app.infoPlist), ("README.md", app.readme), (".gitignore", app.gitignore),
            ("\(appIdentifier).desktop", app.desktopEntry),
        ]
        if managed {
            files.append(("AssetPacks/Intro/Manifest.json", app.packManifest))
            files.append(("AssetPacks/Intro/intro/readme.txt", "Welcome: this file ships in the Intro asset pack.\n"))
        } else {
            files.append((manifestFile, app.manifest))
        }
        switch language {
        case .swift:
            let swift = SwiftTemplate(scaffold: self)
            files.append(("Package.swift", swift.package))
            files.append(("Sources/\(name)/\(name).swift", swift.extensionSource))
            files.append(("Tests/\(name)Tests/\(name)Tests.swift", swift.test))
        case .c:
            let c = CTemplate(scaffold: self)
            files.append(("Makefile", c.makefile))
            files.append(("\(name).c", c.extensionSource))
        }
        return files
    }

    /// Writes the project into `folder`, which must not exist or be empty: nothing is overwritten.
    func write(to folder: URL) throws {
        let manager = FileManager.default
        if let existing = try? manager.contentsOfDirectory(atPath: folder.path), !existing.isEmpty {
            throw ScaffoldError("\(folder.path) exists and is not empty; choose another --output or remove it")
        }
        for (path, contents) in files() {
            let file = folder.appendingPathComponent(path)
            try manager.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: file, options: .withoutOverwriting)
        }
    }
}

/// A scaffold that cannot be made, saying why.
struct ScaffoldError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
