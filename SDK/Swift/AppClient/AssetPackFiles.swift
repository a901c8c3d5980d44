import Glibc
import Vocabulary

/// The installed asset packs' files, in the folder the service keeps them in (one folder a pack, in the app group's
/// container): where a path leads, in one pack, in the packs' shared namespace, or in the packs localized for a
/// language. Once for every binding, without Foundation (`AppClient`). Errors are Apple's `BAManagedErrorDomain` ones.
public struct AssetPackFiles: Sendable {
    /// The folder holding one folder per installed pack.
    public let root: String

    public init(root: String) { self.root = root }

    /// The app's packs, in the container the service names for it.
    public init(_ client: AppClient) throws(HostError) {
        guard let container = client.appContainerPath else {
            throw AppClient.invalid("the bahost service did not name the app's container")
        }
        root = container + "/Library/Application Support/BackgroundAssets/AssetPacks"
    }

    /// Whether a version of the pack is on the device.
    public func isInstalled(_ id: String) -> Bool {
        guard !id.isEmpty, !id.hasPrefix("."), !id.contains("/") else { return false }
        return access("\(root)/\(id)/.bapack/installed.json", F_OK) == 0
    }

    /// The installed packs' IDs, in order.
    public func installedPacks() -> [String] { Self.entries(of: root).filter { !$0.hasPrefix(".") } }

    /// The installed localized packs' languages (BCP-47 tags), by pack ID: each pack's `.bapack/language`, which the
    /// service writes.
    public func installedLanguages() -> [String: String] {
        var languages: [String: String] = [:]
        for pack in installedPacks() {
            guard let text = Self.smallFile("\(root)/\(pack)/.bapack/language", limit: 64) else { continue }
            languages[pack] = text
        }
        return languages
    }

    /// The file at `path` in the one pack `id` (assetPackNotFound when it is not installed), or in the first
    /// installed pack, by ID, that has it (fileNotFound when none does).
    public func locate(_ path: String, in id: String?) throws(HostError) -> String {
        if let id {
            guard isInstalled(id) else { throw Self.packNotFound(id) }
            return try locate(path, among: [id])
        }
        return try locate(path, among: installedPacks())
    }

    /// The file at `path` in the installed packs localized for `language`: those of its very tag first (case aside),
    /// then those of its language (`fr` serves `fr-CA`), as `LanguageTags` matches them.
    public func locate(_ path: String, localizedFor language: String) throws(HostError) -> String {
        let languages = installedLanguages()
        let exact = languages.filter { LanguageTags.same($0.value, language) }.keys.sorted()
        let close = languages.filter { LanguageTags.serves($0.value, language) }.keys.sorted().filter {
            !exact.contains($0)
        }
        return try locate(path, among: exact + close)
    }

    /// The item at `path` in the namespace: a file or folder one pack holds, or, for a folder that several packs
    /// hold, a merged view (a folder of this process's own with links to every pack's entries; the first pack by ID
    /// wins a name they share). A path that leads nowhere comes back as where it would be.
    public func view(of path: String) throws(HostError) -> String {
        guard let relative = Self.relative(path) else { return "\(root)/\(path)" }
        var folders: [String] = []
        for pack in installedPacks() {
            let candidate = "\(root)/\(pack)/\(relative)"
            guard let isFolder = Self.kind(candidate) else { continue }
            if !isFolder && folders.isEmpty { return candidate }
            if isFolder { folders.append(candidate) }
        }
        switch folders.count {
        case 0: return "\(root)/\(relative)"
        case 1: return folders[0]
        default: return try Self.merged(folders)
        }
    }

    private func locate(_ path: String, among packs: [String]) throws(HostError) -> String {
        guard let relative = Self.relative(path) else { throw Self.fileNotFound(path) }
        for pack in packs {
            let candidate = "\(root)/\(pack)/\(relative)"
            if access(candidate, F_OK) == 0 { return candidate }
        }
        throw Self.fileNotFound(path)
    }

    /// `path` as a relative path inside the namespace, its separators single; nil for one that is absolute, empty,
    /// has a `.` or `..` component, or reaches into a pack's own `.bapack` folder.
    static func relative(_ path: String) -> String? {
        guard !path.hasPrefix("/") else { return nil }
        let components = path.split(separator: "/")
        guard let first = components.first, first != ".bapack",
            !components.contains(where: { $0 == "." || $0 == ".." })
        else { return nil }
        return components.joined(separator: "/")
    }

    public static func fileNotFound(_ path: String) -> HostError {
        HostError(
            code: ManagedErrorCode.fileNotFound, domain: ManagedErrorCode.domain,
            message: "no file at '\(path)' in the asset packs")
    }

    public static func packNotFound(_ id: String) -> HostError {
        HostError(
            code: ManagedErrorCode.assetPackNotFound, domain: ManagedErrorCode.domain,
            message: "no asset pack '\(id)' is offered to this app")
    }

    // MARK: The file system

    /// A folder's entries but `.` and `..`, sorted; none when it cannot be read.
    static func entries(of folder: String) -> [String] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Whether `path` is a folder (true), another kind of file (false), or nothing (nil); links are followed.
    static func kind(_ path: String) -> Bool? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return status.st_mode & S_IFMT == S_IFDIR
    }

    /// A small text file's contents; nil when it cannot be read or holds more than `limit` bytes.
    static func smallFile(_ path: String, limit: Int) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            count += got
        }
        guard count <= limit else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self)
    }

    /// A new folder, private to this process, that links every entry of `folders` (merging subfolders they share).
    private static func merged(_ folders: [String]) throws(HostError) -> String {
        let temporary = ProcessEnvironment.value("TMPDIR").flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let base = "\(temporary)/bahost-asset-packs-\(getpid())"
        mkdir(base, 0o700)
        let view = "\(base)/\(UUIDText.random())"
        guard mkdir(view, 0o700) == 0 else { throw HostError.system("cannot make the folder \(view)") }
        func merge(_ sources: [String], into target: String) throws(HostError) {
            var subfolders: [String: [String]] = [:]
            var order: [String] = []
            for source in sources {
                for name in entries(of: source) {
                    let entry = "\(source)/\(name)"
                    if kind(entry) == true {
                        if subfolders[name] == nil { order.append(name) }
                        subfolders[name, default: []].append(entry)
                    } else if access("\(target)/\(name)", F_OK) != 0, symlink(entry, "\(target)/\(name)") != 0 {
                        throw HostError.system("cannot link \(entry) into \(target)")
                    }
                }
            }
            for name in order where access("\(target)/\(name)", F_OK) != 0 {
                guard mkdir("\(target)/\(name)", 0o700) == 0 else { throw HostError.system("cannot make \(target)/\(name)") }
                try merge(subfolders[name]!, into: "\(target)/\(name)")
            }
        }
        try merge(folders, into: view)
        return view
    }
}
