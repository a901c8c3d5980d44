import Foundation

/// An app's Background Assets configuration, read from its Info.plist (XML; a binary one is refused) with Apple's keys.
public struct AppConfiguration: Sendable, Hashable {
    /// `CFBundleIdentifier`.
    public var appIdentifier: String
    /// `CFBundleVersion`: what tells an update from the version installed, for an app a package declares.
    public var bundleVersion: String?
    /// `BAAppGroupID`: the app group whose container receives finished files.
    public var appGroupIdentifier: String
    /// `BAManifestURL`.
    public var manifestURL: URL
    /// `BAInitialDownloadRestrictions`: apply until the app's first launch.
    public var initialRestrictions: InitialDownloadRestrictions
    /// `BAMaxInstallSize`: uncompressed bytes of non-essential assets.
    public var maxInstallSize: Int64
    /// `BAEssentialMaxInstallSize`: uncompressed bytes of essential assets; nil when the app declares none.
    public var essentialMaxInstallSize: Int64?
    /// `BAHasManagedAssetPacks`: the host downloads and updates the app's asset packs; `manifestURL` then names a
    /// download manifest (`bahost pack download-manifest create`).
    public var hasManagedAssetPacks: Bool
    /// `BAHostShowsDownloadProgress` (a bahost key, off by default): the service shows on the desktop the progress of
    /// what the app asked for in the foreground (`startForegroundDownload`, `ensureLocalAvailability`), as it does
    /// for every launch's essential downloads.
    public var showsDownloadProgress: Bool
    /// `BAHostSharesWithPeers` (a bahost key, off by default): the app's managed packs may be shared with other
    /// machines on the network, when the person's settings allow it (docs/PEERS.md). Off, paid or private content
    /// never leaves the machine except to the app.
    public var sharesWithPeers: Bool
    /// `BAHostExtension` (a bahost key): the extension's shared object, relative to the app's folder. When absent,
    /// `bahost install` takes the one `.so` in the folder.
    public var extensionPath: String?

    public struct InitialDownloadRestrictions: Sendable, Hashable {
        /// `BADownloadAllowance`: on-the-wire bytes of non-essential downloads (the manifest included).
        public var downloadAllowance: Int64
        /// `BAEssentialDownloadAllowance`: on-the-wire bytes of essential downloads; 0 when absent.
        public var essentialDownloadAllowance: Int64
        /// `BADownloadDomainAllowList`: DNS names; a leading `*.` matches any subdomain.
        public var domainAllowList: [String]
    }

    /// The largest Info.plist read: Apple's are a few KB, and the service reads the files of every app a package
    /// declares.
    public static let maximumBytes = 1 << 20

    /// Reads and checks an Info.plist: a regular file of at most `maximumBytes` (one linked to `/dev/zero` or a FIFO
    /// would have the reader wait, or fill its memory, forever).
    public init(contentsOf url: URL) throws(AppConfigurationError) {
        func fail(_ problem: String) -> AppConfigurationError { AppConfigurationError(file: url.path, problem: problem) }
        let fd = open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw fail("cannot be read: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { throw fail("is not a regular file") }
        guard info.st_size <= Self.maximumBytes else {
            throw fail("is \(info.st_size) bytes; the largest Info.plist read is \(Self.maximumBytes)")
        }
        // Read to the limit whatever the size said: a file may grow while it is read.
        let data: Data
        do {
            data = try FileHandle(fileDescriptor: fd, closeOnDealloc: false).read(upToCount: Self.maximumBytes + 1) ?? Data()
        } catch {
            throw fail("cannot be read: \(error.localizedDescription)")
        }
        guard data.count <= Self.maximumBytes else { throw fail("is larger than \(Self.maximumBytes) bytes, the largest Info.plist read") }
        try self.init(infoPlist: data, file: url.path)
    }

    /// Checks Info.plist bytes; `file` names them in errors.
    public init(infoPlist data: Data, file: String = "Info.plist") throws(AppConfigurationError) {
        // Binary property lists are refused: on a malformed one, Foundation's binary parser on Linux confuses types and
        // crashes the process (found by fuzzing: Fuzz/Findings/info-plist), and the service parses apps' files.
        guard !data.starts(with: Data("bplist".utf8)) else {
            throw AppConfigurationError(
                file: file,
                problem: "is a binary property list, which bahost does not read (a malformed one can crash Foundation's "
                    + "parser on Linux): convert it to XML, with plutil -convert xml1 on macOS or Python's plistlib")
        }
        let plist: InfoPlist
        do {
            // PropertyListSerialization first: Foundation's PropertyListDecoder stops the process (a fatal error, not
            // a thrown one) on some malformed files, an <integer> with non-digits among them (found by fuzzing:
            // Fuzz/Findings/info-plist). Only a file the parser accepts reaches the decoder.
            _ = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
            plist = try PropertyListDecoder().decode(InfoPlist.self, from: data)
        } catch let error as DecodingError {
            throw AppConfigurationError(file: file, problem: Self.describe(error))
        } catch {
            throw AppConfigurationError(file: file, problem: "is not a property list: \(error.localizedDescription)")
        }
        func fail(_ problem: String) -> AppConfigurationError { AppConfigurationError(file: file, problem: problem) }

        // Both name folders on disk: reverse-DNS names only.
        for (key, value) in [("CFBundleIdentifier", plist.CFBundleIdentifier), ("BAAppGroupID", plist.BAAppGroupID)] {
            guard value.utf8.count <= Self.longestName else {
                throw fail("\(key) is \(value.utf8.count) bytes long; the longest accepted is \(Self.longestName)")
            }
            // Quoted with its control characters escaped: the file is the app's, and this line reaches a terminal.
            guard Self.isReverseDNS(value) else {
                throw fail("\(key) must be a reverse-DNS name (letters, digits, '-', '.'), not \(value.debugDescription)")
            }
        }
        guard let manifestURL = URL(string: plist.BAManifestURL), let scheme = manifestURL.scheme?.lowercased(),
            ["https", "http"].contains(scheme), manifestURL.host?.isEmpty == false
        else { throw fail("BAManifestURL is not an http(s) URL: \(plist.BAManifestURL)") }
        let restrictions = plist.BAInitialDownloadRestrictions
        let sizes: [(String, Int64?)] = [
            ("BAInitialDownloadRestrictions.BADownloadAllowance", restrictions.BADownloadAllowance),
            ("BAInitialDownloadRestrictions.BAEssentialDownloadAllowance", restrictions.BAEssentialDownloadAllowance),
            ("BAMaxInstallSize", plist.BAMaxInstallSize), ("BAEssentialMaxInstallSize", plist.BAEssentialMaxInstallSize),
        ]
        for (key, value) in sizes where (value ?? 0) < 0 { throw fail("\(key) is negative") }
        for domain in restrictions.BADownloadDomainAllowList
        where domain.isEmpty || domain == "*" || domain == "*." || domain.contains("/") || domain.contains(" ") {
            throw fail("BAInitialDownloadRestrictions.BADownloadDomainAllowList has an invalid domain '\(domain)'")
        }

        appIdentifier = plist.CFBundleIdentifier
        bundleVersion = plist.CFBundleVersion
        appGroupIdentifier = plist.BAAppGroupID
        self.manifestURL = manifestURL
        initialRestrictions = InitialDownloadRestrictions(
            downloadAllowance: restrictions.BADownloadAllowance,
            essentialDownloadAllowance: restrictions.BAEssentialDownloadAllowance ?? 0,
            domainAllowList: restrictions.BADownloadDomainAllowList)
        maxInstallSize = plist.BAMaxInstallSize
        essentialMaxInstallSize = plist.BAEssentialMaxInstallSize
        if let path = plist.BAHostExtension, path.isEmpty || path.hasPrefix("/") || path.split(separator: "/").contains("..") {
            throw fail("BAHostExtension must be a path inside the app's folder, not '\(path)'")
        }
        extensionPath = plist.BAHostExtension
        hasManagedAssetPacks = plist.BAHasManagedAssetPacks ?? false
        showsDownloadProgress = plist.BAHostShowsDownloadProgress ?? false
        sharesWithPeers = plist.BAHostSharesWithPeers ?? false
        if plist.BAUsesAppleHosting == true {
            throw fail(
                "BAUsesAppleHosting needs Apple's servers; on bahost, host the packs yourself: set BAUsesAppleHosting to false and BAManifestURL to a download manifest (bahost pack download-manifest create)")
        }
    }

    /// The longest bundle or app group identifier accepted, in bytes: each names a folder.
    static let longestName = 200

    static func isReverseDNS(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= longestName && !name.hasPrefix(".") && !name.contains("..")
            && name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == ".") }
    }

    /// A decoding error as one sentence naming the key.
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context, _ last: CodingKey? = nil) -> String {
            (context.codingPath + (last.map { [$0] } ?? [])).map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "the required key \(path(context, key)) is missing"
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            return "the key \(path(context)) must be \(typeName(type))"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "is not an XML property list" : "the key \(path(context)) is malformed"
        @unknown default:
            return "cannot be decoded"
        }
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int64.Type, is Int.Type: "an integer"
        case is [String].Type: "an array of strings"
        default: "a dictionary"
        }
    }
}

/// An Info.plist that cannot configure Background Assets, with the key at fault.
public struct AppConfigurationError: Error, CustomStringConvertible, Equatable {
    public var file: String
    public var problem: String
    public var description: String { "\(file): \(problem)" }
}

/// The Info.plist keys, spelled as Apple spells them.
private struct InfoPlist: Decodable {
    var CFBundleIdentifier: String
    var CFBundleVersion: String?
    var BAAppGroupID: String
    var BAManifestURL: String
    var BAInitialDownloadRestrictions: Restrictions
    var BAMaxInstallSize: Int64
    var BAEssentialMaxInstallSize: Int64?
    var BAHostExtension: String?
    var BAHasManagedAssetPacks: Bool?
    var BAHostShowsDownloadProgress: Bool?
    var BAHostSharesWithPeers: Bool?
    var BAUsesAppleHosting: Bool?

    struct Restrictions: Decodable {
        var BADownloadAllowance: Int64
        var BAEssentialDownloadAllowance: Int64?
        var BADownloadDomainAllowList: [String]
    }
}
