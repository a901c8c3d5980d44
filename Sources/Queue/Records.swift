import Foundation
import GRDB
import HostVocabulary
import Vocabulary

/// One download in the queue, with everything needed to resume it after the host is killed.
///
/// Stored as plain columns, one per field (no JSON): the engine reads and writes these rows on every state change,
/// and decoding them by position costs a fraction of Codable's keyed decoding.
public struct QueuedDownload: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "download"

    public var uniqueIdentifier: String
    public var appIdentifier: String
    /// Insertion order, for downloads of equal priority.
    public var sequence: Int64
    /// Copies of `download`'s fields that queries sort and search on; `download` never changes once queued.
    public var identifier: String
    public var priority: Int64
    public var isEssential: Bool
    /// The URL's host, for the per-host limit.
    public var host: String
    public var download: Download
    public var state: TransferState
    /// Bytes of the file on disk when last saved (the partial file's length is the truth when resuming).
    public var bytesReceived: Int64
    /// The validator of the bytes already received: resumes send it in `If-Range`.
    public var etag: String?
    public var lastModified: String?
    public var attempts: Int
    public var retryAt: Date?
    public var error: HostError?
    /// The finished file in the app's container, until its completion is delivered.
    public var filePath: String?
    /// Windows that were opened to deliver this completion; it is given up after a few that never returned.
    public var deliveryAttempts: Int
    public var delivered: Bool
    /// Who holds the completion while its callback may run (`DeliveryClaim`'s text in the Delivery module): made
    /// durable before the callback is made, so that no other receiver gets it meanwhile, and cleared when it is
    /// delivered or its receiver is gone. Nil: never offered since it was last released.
    public var claim: String?
    /// Started or promoted by the app with `startForegroundDownload`: it goes first and does not wait for the
    /// network.
    public var foreground: Bool
    /// Since when its transfers have found no path to its server (`TransferError.offline`), without one reaching it
    /// in between: the resource timeout counts from here. Nil once a transfer reaches the server.
    public var offlineSince: Date?

    /// - Parameter host: the host of the download's URL (`host(of:)`) when the caller has it already; else it is
    ///   found here.
    public init(
        appIdentifier: String, sequence: Int64, download: Download, foreground: Bool = false, host: String? = nil
    ) {
        let download = download.withUniqueIdentifier()
        uniqueIdentifier = download.uniqueIdentifier!
        self.appIdentifier = appIdentifier
        self.sequence = sequence
        self.download = download
        identifier = download.identifier
        priority = download.priority
        isEssential = download.isEssential
        self.host = host ?? Self.host(of: download)
        state = .queued
        bytesReceived = 0
        attempts = 0
        deliveryAttempts = 0
        delivered = false
        self.foreground = foreground
    }

    /// The host of the download's URL, as its row keeps it (for the per-host limits); empty when it has none.
    public static func host(of download: Download) -> String {
        URLComponents.parsed(download.url ?? "")?.host ?? ""
    }

    /// How its transfers use the network, as `NetworkConditions` judge it.
    public var networkUse: NetworkUse {
        NetworkUse(discretionary: !isEssential && !foreground, access: download.networkAccess, host: host)
    }

    /// The download as the ABI describes it, with its current public state.
    public var described: Download {
        var d = download
        d.state = state.publicState
        return d
    }

    // MARK: Rows

    /// Every column, in the order `init(row:)` reads them.
    static let columns = [
        "uniqueIdentifier", "appIdentifier", "sequence", "kind", "identifier", "url", "applicationGroupIdentifier",
        "fileSize", "priority", "isEssential", "sha256", "httpHeaders", "host", "foreground", "state", "bytesReceived",
        "etag", "lastModified", "attempts", "retryAt", "errorCode", "errorDomain", "errorMessage", "filePath",
        "deliveryAttempts", "delivered", "claim", "offlineSince", "networkAccess",
    ]
    /// Where `init(row:)` finds the columns the run order judges a candidate by.
    enum Index {
        static let uniqueIdentifier = 0
        static let appIdentifier = 1
        static let isEssential = 9
        static let host = 12
        static let foreground = 13
        static let networkAccess = 28
    }
    /// `columns` for SQL: `SELECT \(selection) FROM download …`.
    static let selection = columns.joined(separator: ", ")
    public static var databaseSelection: [any SQLSelectable] { columns.map { Column($0) } }

    public init(row: Row) throws {
        let uniqueIdentifier: String = row[Index.uniqueIdentifier]
        let kind: Int32 = row[3]
        download = Download(
            kind: Download.Kind(rawValue: kind) ?? .url, identifier: row[4], uniqueIdentifier: uniqueIdentifier,
            url: row[5], applicationGroupIdentifier: row[6], fileSize: row[7], priority: row[8],
            isEssential: row[Index.isEssential], sha256: row[10], httpHeaders: Self.headers(row[11]),
            networkAccess: NetworkAccess(rawValue: row[Index.networkAccess]))
        self.uniqueIdentifier = uniqueIdentifier
        appIdentifier = row[Index.appIdentifier]
        sequence = row[2]
        identifier = download.identifier
        priority = download.priority
        isEssential = download.isEssential
        host = row[Index.host]
        foreground = row[Index.foreground]
        state = TransferState(rawValue: row[14]) ?? .queued
        bytesReceived = row[15]
        etag = row[16]
        lastModified = row[17]
        attempts = row[18]
        retryAt = (row[19] as Double?).map { Date(timeIntervalSince1970: $0) }
        if let code: Int64 = row[20] {
            error = HostError(code: code, domain: row[21] ?? "", message: row[22] ?? "")
        }
        filePath = row[23]
        deliveryAttempts = row[24]
        delivered = row[25]
        claim = row[26]
        offlineSince = (row[27] as Double?).map { Date(timeIntervalSince1970: $0) }
    }

    /// The INSERT of a row, made once: the statement cache finds its statement by this text.
    static let insertStatement = insertSQL(into: databaseTableName)

    /// An INSERT into `table` of the first `count` columns (all of them unless a migration of an older table asks).
    static func insertSQL(into table: String, count: Int = columns.count) -> String {
        let names = columns.prefix(count)
        return "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(names.map { _ in "?" }.joined(separator: ", ")))"
    }

    public func encode(to container: inout PersistenceContainer) throws {
        for (column, value) in zip(Self.columns, databaseValues) { container[column] = value }
    }

    /// The row's values, in `columns` order.
    var databaseValues: [(any DatabaseValueConvertible)?] {
        var values = BoxedRowValues()
        giveValues(to: &values)
        return values.values
    }

    /// Inserts the row with `statement`, a prepared `insertStatement`.
    func insert(with statement: Statement) throws {
        var binder = StatementBinder(statement, count: Self.columns.count)
        giveValues(to: &binder)
        try binder.execute()
    }

    /// Gives the row's values to `sink` in `columns` order, each in its own type: the one list of them, which
    /// `databaseValues` boxes and `StatementBinder` binds as they come.
    func giveValues(to sink: inout some RowValueSink) {
        sink.add(uniqueIdentifier)
        sink.add(appIdentifier)
        sink.add(sequence)
        sink.add(download.kind.rawValue)
        sink.add(identifier)
        sink.add(download.url)
        sink.add(download.applicationGroupIdentifier)
        sink.add(download.fileSize)
        sink.add(priority)
        sink.add(isEssential)
        sink.add(download.sha256)
        sink.add(Self.headersText(download.httpHeaders))
        sink.add(host)
        sink.add(foreground)
        sink.add(state.rawValue)
        sink.add(bytesReceived)
        sink.add(etag)
        sink.add(lastModified)
        sink.add(attempts)
        sink.add(retryAt?.timeIntervalSince1970)
        sink.add(error?.code)
        sink.add(error?.domain)
        sink.add(error?.message)
        sink.add(filePath)
        sink.add(deliveryAttempts)
        sink.add(delivered)
        sink.add(claim)
        sink.add(offlineSince?.timeIntervalSince1970)
        sink.add(Int64(download.networkAccess.rawValue))
    }

    /// Headers as one text: most downloads have none (NULL). A refused download may hold any text, line breaks
    /// included, so they are kept as a JSON array rather than joined.
    static func headersText(_ headers: [String]) -> String? {
        headers.isEmpty ? nil : JSONText.array(headers)
    }

    static func headers(_ text: String?) -> [String] {
        guard let text, let headers = try? JSONDecoder().decode([String].self, from: Data(text.utf8)) else { return [] }
        return headers
    }
}

/// An installed app: its configuration as the queue needs it to run and resume without the original files.
public struct AppRecord: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "app"

    public var appIdentifier: String
    public var appGroupIdentifier: String
    /// The extension's shared object.
    public var pluginPath: String
    public var manifestURL: String
    public var domainAllowList: [String]
    public var downloadAllowance: Int64
    public var essentialDownloadAllowance: Int64
    /// Bytes counted against the allowances so far.
    public var usedBytes: Int64
    public var usedEssentialBytes: Int64
    /// Restrictions apply until the app's first launch.
    public var launched: Bool
    public var allowInsecureLoopback: Bool
    /// `BAHasManagedAssetPacks`: `manifestURL` names a download manifest, and the host manages the app's packs.
    public var hasManagedAssetPacks: Bool
    /// `BAHostShowsDownloadProgress`: the desktop shows the progress of its foreground downloads.
    public var showsDownloadProgress: Bool
    /// `BAHostSharesWithPeers`: its managed packs may be shared with other machines on the network.
    public var sharesWithPeers: Bool
    /// `bahost debug url-override`: fetch the manifest from here instead (a local `bahost serve`), until cleared.
    /// An update of the app keeps it.
    public var manifestURLOverride: String?
    /// A Flatpak app's own folder, `~/.var/app/APP_ID`, which its sandbox sees at the same path: its app group's
    /// container and its exclusive-control lock live there (`DataRoot.SandboxHomes`); nil for a native app.
    public var sandboxHome: String?

    /// The manifest URL in force: the development override, else `BAManifestURL`.
    public var effectiveManifestURL: String { manifestURLOverride ?? manifestURL }

    public init(
        appIdentifier: String, appGroupIdentifier: String, pluginPath: String, manifestURL: String,
        domainAllowList: [String], downloadAllowance: Int64, essentialDownloadAllowance: Int64,
        allowInsecureLoopback: Bool, hasManagedAssetPacks: Bool = false, showsDownloadProgress: Bool = false,
        sandboxHome: String? = nil, sharesWithPeers: Bool = false
    ) {
        self.sharesWithPeers = sharesWithPeers
        self.appIdentifier = appIdentifier
        self.appGroupIdentifier = appGroupIdentifier
        self.pluginPath = pluginPath
        self.manifestURL = manifestURL
        self.domainAllowList = domainAllowList
        self.downloadAllowance = downloadAllowance
        self.essentialDownloadAllowance = essentialDownloadAllowance
        usedBytes = 0
        usedEssentialBytes = 0
        launched = false
        self.allowInsecureLoopback = allowInsecureLoopback
        self.hasManagedAssetPacks = hasManagedAssetPacks
        self.showsDownloadProgress = showsDownloadProgress
        manifestURLOverride = nil
        self.sandboxHome = sandboxHome
    }
}

// The shared value types the queue stores (Vocabulary): a download's state as its text, and the service's per-app
// schedule by its Codable fields, one column each.
extension TransferState: DatabaseValueConvertible {}

extension AppSchedule: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "appSchedule"
}
