/// A remote asset to download (Apple's `BAURLDownload`).
public final class BAURLDownload: BADownload, @unchecked Sendable {
    let request: URLRequest
    /// bahost addition: the SHA-256 the finished file must have, as 64 hex digits.
    let expectedSHA256: String?

    /// Creates a download.
    /// - Parameters:
    ///   - identifier: tracks the download across the app and its extension.
    ///   - request: its URL must be https.
    ///   - essential: essential downloads block the app's launch; only for install and update requests.
    ///   - fileSize: the exact size on the wire; a download whose body differs fails.
    ///   - applicationGroupIdentifier: the app group whose container receives the file.
    ///   - priority: between `.min` and `.max`; `.default` when it does not matter.
    public init(
        identifier: String, request: URLRequest, essential: Bool, fileSize: Int, applicationGroupIdentifier: String,
        priority: BADownload.Priority
    ) {
        self.request = request
        expectedSHA256 = nil
        super.init(
            identifier: identifier, priority: priority, isEssential: essential,
            applicationGroupIdentifier: applicationGroupIdentifier, fileSize: fileSize)
    }

    /// bahost addition: a download whose finished file must also have this SHA-256 (64 hex digits), or it is
    /// never delivered.
    public init(
        identifier: String, request: URLRequest, essential: Bool, fileSize: Int, applicationGroupIdentifier: String,
        priority: BADownload.Priority, sha256: String
    ) {
        self.request = request
        expectedSHA256 = sha256
        super.init(
            identifier: identifier, priority: priority, isEssential: essential,
            applicationGroupIdentifier: applicationGroupIdentifier, fileSize: fileSize)
    }

    /// A non-essential download of `fileSize` bytes at the default priority.
    public convenience init(
        identifier: String, request: URLRequest, fileSize: Int, applicationGroupIdentifier: String
    ) {
        self.init(
            identifier: identifier, request: request, essential: false, fileSize: fileSize,
            applicationGroupIdentifier: applicationGroupIdentifier, priority: .default)
    }

    @available(*, deprecated, message: "Use init(identifier:request:fileSize:applicationGroupIdentifier:)")
    public convenience init(identifier: String, request: URLRequest, applicationGroupIdentifier: String) {
        self.init(
            identifier: identifier, request: request, essential: false, fileSize: 0,
            applicationGroupIdentifier: applicationGroupIdentifier, priority: .default)
    }

    @available(
        *, deprecated,
        message: "Use init(identifier:request:essential:fileSize:applicationGroupIdentifier:priority:)")
    public convenience init(
        identifier: String, request: URLRequest, applicationGroupIdentifier: String, priority: BADownload.Priority
    ) {
        self.init(
            identifier: identifier, request: request, essential: false, fileSize: 0,
            applicationGroupIdentifier: applicationGroupIdentifier, priority: priority)
    }

    /// A download as the host described it.
    init(
        identifier: String, uniqueIdentifier: String?, state: State, request: URLRequest, essential: Bool,
        fileSize: Int, applicationGroupIdentifier: String, priority: Priority, sha256: String?
    ) {
        self.request = request
        expectedSHA256 = sha256
        super.init(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, state: state, priority: priority,
            isEssential: essential, applicationGroupIdentifier: applicationGroupIdentifier, fileSize: fileSize)
    }

    public required init(copying other: BADownload) {
        let other = other as! BAURLDownload
        request = other.request
        expectedSHA256 = other.expectedSHA256
        super.init(copying: other)
    }

    override class var className: String { "BAURLDownload" }
}
