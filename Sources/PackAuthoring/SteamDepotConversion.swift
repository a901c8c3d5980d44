import Foundation
import Packs

/// `bahost pack convert` (Apple's `ba-package convert`, 27): a Steam depot build script (`depot_build_*.vdf`, Valve's
/// KeyValues text) as a pack manifest, so that a game that ships on Steam describes its packs once.
///
///     "DepotBuildConfig"
///     {
///         "DepotID" "1001"
///         "ContentRoot" "../content/"
///         "FileMapping" { "LocalPath" "*" "DepotPath" "." "recursive" "1" }
///         "FileExclusion" "*.pdb"
///     }
///
/// `ContentRoot` (relative to the script) becomes `sourceRoot` (relative to the manifest). A mapping to the depot's
/// root keeps its paths, so it becomes a `filePattern` (`**/` in front when recursive); a folder mapped elsewhere
/// becomes a `directorySource`, a file a `fileSource`; a wildcard mapped elsewhere has no selector of Apple's that
/// keeps it, so it is expanded into one `fileSource` per file found now. Exclusions become `fileExclusion`s (at any
/// depth when they name no folder, as Steam's do).
public enum SteamDepotConversion {
    /// Largest script read.
    public static let maximumBytes = 1 << 20

    /// The pack manifest for the script at `scriptPath`, to be written at `manifestPath`.
    public static func convert(
        scriptPath: String, manifestPath: String, assetPackID: String?, downloadPolicy: DownloadPolicy
    ) throws(PackError) -> PackManifest {
        guard let data = FileManager.default.contents(atPath: scriptPath) else {
            throw .unreadableSource("cannot read \(scriptPath)")
        }
        guard data.count <= maximumBytes else { throw .invalidManifest("\(scriptPath) is larger than \(maximumBytes) bytes") }
        let root = try KeyValues.parse(String(decoding: data, as: UTF8.self))
        guard let config = root.child("DepotBuildConfig") else {
            throw .invalidManifest("\(scriptPath) has no \"DepotBuildConfig\" block: is it a depot build script?")
        }
        let id = assetPackID ?? config.value("DepotID").map { "depot-\($0)" }
        guard let id else { throw .invalidManifest("\(scriptPath) names no DepotID: give --asset-pack-id") }

        let scriptFolder = URL(fileURLWithPath: scriptPath).deletingLastPathComponent()
        let contentRoot = (config.value("ContentRoot") ?? ".").replacingOccurrences(of: "\\", with: "/")
        guard !contentRoot.contains(":") else {
            throw .invalidManifest("ContentRoot \(PackError.quoted(contentRoot)) is a Windows path: make it relative to the script")
        }
        let content = contentRoot.hasPrefix("/")
            ? URL(fileURLWithPath: contentRoot, isDirectory: true)
            : scriptFolder.appendingPathComponent(contentRoot, isDirectory: true)
        let manifestFolder = URL(fileURLWithPath: manifestPath).deletingLastPathComponent()
        guard let sourceRoot = relativePath(from: manifestFolder, to: content) else {
            throw .invalidManifest("the content root \(content.path) is not under the manifest's folder \(manifestFolder.path): write the manifest above it")
        }

        var selectors: [FileSelector] = []
        for mapping in config.children("FileMapping") {
            selectors += try self.selectors(for: mapping, content: content)
        }
        for exclusion in config.values("FileExclusion") {
            // Steam matches an exclusion without a folder against file names at any depth.
            let pattern = exclusion.replacingOccurrences(of: "\\", with: "/")
            selectors.append(.fileExclusion(pattern.contains("/") ? pattern : "**/" + pattern))
        }
        let manifest = PackManifest(
            assetPackID: id, downloadPolicy: downloadPolicy, fileSelectors: selectors,
            sourceRoot: sourceRoot.isEmpty ? nil : sourceRoot)
        try manifest.validate()
        return manifest
    }

    private static func selectors(for mapping: KeyValues, content: URL) throws(PackError) -> [FileSelector] {
        guard let local = mapping.value("LocalPath")?.replacingOccurrences(of: "\\", with: "/") else {
            throw .invalidManifest("a FileMapping has no LocalPath")
        }
        let depot = normalized(mapping.value("DepotPath")?.replacingOccurrences(of: "\\", with: "/") ?? ".")
        let recursive = mapping.value("recursive") == "1"
        let slash = local.lastIndex(of: "/")
        let folder = slash.map { String(local[..<$0]) } ?? ""
        let name = slash.map { String(local[local.index(after: $0)...]) } ?? local
        let wildcard = name.contains("*") || name.contains("?")
        if !wildcard {
            var isFolder: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: content.appendingPathComponent(local).path, isDirectory: &isFolder)
            guard exists else { throw .unreadableSource("the FileMapping's LocalPath \(PackError.quoted(local)) is not under the content root") }
            if isFolder.boolValue {
                guard !depot.isEmpty else { return [.directory(local)] }
                return [.directorySource(local, destination: depot)]
            }
            let destination = depot.isEmpty ? name : depot + "/" + name
            return destination == local ? [.file(local)] : [.fileSource(local, destination: destination)]
        }
        let pattern = recursive ? "**/" + name : name
        // Paths kept as they are: a glob over the content root does it.
        if depot == normalized(folder) {
            return [.filePattern(folder.isEmpty || folder == "." ? pattern : normalized(folder) + "/" + pattern)]
        }
        // Moved elsewhere: expanded now.
        let base = content.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(atPath: base.path) else {
            throw .unreadableSource("cannot list \(base.path)")
        }
        var selectors: [FileSelector] = []
        for case let inner as String in walker {
            var info = stat()
            guard lstat(base.appendingPathComponent(inner).path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                recursive || !inner.contains("/"), fnmatch(name, String(inner.split(separator: "/").last ?? ""), 0) == 0
            else { continue }
            let source = normalized(folder).isEmpty ? inner : normalized(folder) + "/" + inner
            selectors.append(.fileSource(source, destination: depot.isEmpty ? inner : depot + "/" + inner))
        }
        return selectors.sorted { "\($0)" < "\($1)" }
    }

    /// `.` and `./x/` as `` and `x`.
    private static func normalized(_ path: String) -> String {
        path.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
    }

    /// `target` relative to `base`, when it is under it ("" when it is `base`).
    static func relativePath(from base: URL, to target: URL) -> String? {
        let from = base.standardizedFileURL.resolvingSymlinksInPath().pathComponents
        let to = target.standardizedFileURL.resolvingSymlinksInPath().pathComponents
        guard to.starts(with: from) else { return nil }
        return to.dropFirst(from.count).joined(separator: "/")
    }
}
