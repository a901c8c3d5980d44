/// A download read where it is stored (a queue's row, a frame of the service's reply), without making a `Download`
/// of it: its numbers, and its strings as the UTF-8 bytes they are stored as, valid only during the call it is given
/// to. The service writes its reply to `fetchCurrentDownloads` from these, and the app's C library copies them from
/// that reply, where making and dropping a `Download` of each, its strings and header array, was most of a long
/// fetch on either side (docs/performance/DECISIONS.md #38).
public struct DownloadInPlace {
    public let kind: Download.Kind
    public let identifier: UnsafeBufferPointer<UInt8>
    public let uniqueIdentifier: UnsafeBufferPointer<UInt8>?
    public let url: UnsafeBufferPointer<UInt8>?
    public let applicationGroupIdentifier: UnsafeBufferPointer<UInt8>
    public let fileSize: Int64
    public let priority: Int64
    public let state: Int32
    public let isEssential: Bool
    public let sha256: UnsafeBufferPointer<UInt8>?
    /// `Name: value` request headers: few downloads have any (an empty array allocates nothing).
    public let httpHeaders: [String]
    public let networkAccess: NetworkAccess

    public init(
        kind: Download.Kind, identifier: UnsafeBufferPointer<UInt8>, uniqueIdentifier: UnsafeBufferPointer<UInt8>?,
        url: UnsafeBufferPointer<UInt8>?, applicationGroupIdentifier: UnsafeBufferPointer<UInt8>, fileSize: Int64,
        priority: Int64, state: Int32, isEssential: Bool, sha256: UnsafeBufferPointer<UInt8>?, httpHeaders: [String],
        networkAccess: NetworkAccess = []
    ) {
        self.kind = kind
        self.identifier = identifier
        self.uniqueIdentifier = uniqueIdentifier
        self.url = url
        self.applicationGroupIdentifier = applicationGroupIdentifier
        self.fileSize = fileSize
        self.priority = priority
        self.state = state
        self.isEssential = isEssential
        self.sha256 = sha256
        self.httpHeaders = httpHeaders
        self.networkAccess = networkAccess
    }

    /// The download as a value, its strings copied.
    public var download: Download {
        func text(_ bytes: UnsafeBufferPointer<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
        return Download(
            kind: kind, identifier: text(identifier), uniqueIdentifier: uniqueIdentifier.map(text), url: url.map(text),
            applicationGroupIdentifier: text(applicationGroupIdentifier), fileSize: fileSize, priority: priority,
            state: state, isEssential: isEssential, sha256: sha256.map(text), httpHeaders: httpHeaders,
            networkAccess: networkAccess)
    }
}
