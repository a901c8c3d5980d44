import Vocabulary

/// A remote asset to download (Apple's `BAURLDownload`).
public final class BAURLDownload: BADownload, @unchecked Sendable {  // safe: as BADownload; its own are constants
    /// Where the download's request came from: the app's or extension's own `URLRequest`, or the host's description
    /// (the URL and header lines as they were scheduled), which becomes a `URLRequest` only when one is asked for.
    /// `fetchCurrentDownloads` makes one object per queued download, and building a `URLRequest` for each was a large
    /// part of its cost (docs/performance/DECISIONS.md #40).
    private enum Source {
        case request(URLRequest)
        case described(url: String, headerLines: [String], networkAccess: NetworkAccess)
    }

    private let source: Source
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
        source = .request(request)
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
        source = .request(request)
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

    /// A non-essential download of unknown size at the default priority (deprecated by Apple in 16.4).
    @available(*, deprecated, message: "Use init(identifier:request:fileSize:applicationGroupIdentifier:)")
    public convenience init(identifier: String, request: URLRequest, applicationGroupIdentifier: String) {
        self.init(
            identifier: identifier, request: request, essential: false, fileSize: 0,
            applicationGroupIdentifier: applicationGroupIdentifier, priority: .default)
    }

    /// A non-essential download of unknown size at `priority` (deprecated by Apple in 16.4).
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

    /// A download as the host described it: `url` is an absolute URL the host already checked.
    init(
        identifier: String, uniqueIdentifier: String?, state: State, url: String, headerLines: [String],
        networkAccess: NetworkAccess, essential: Bool, fileSize: Int, applicationGroupIdentifier: String,
        priority: Priority, sha256: String?
    ) {
        source = .described(url: url, headerLines: headerLines, networkAccess: networkAccess)
        expectedSHA256 = sha256
        super.init(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier, state: state, priority: priority,
            isEssential: essential, applicationGroupIdentifier: applicationGroupIdentifier, fileSize: fileSize)
    }

    public required init(copying other: BADownload) {
        let other = other as! BAURLDownload
        source = other.source
        expectedSHA256 = other.expectedSHA256
        super.init(copying: other)
    }

    override class var className: String { "BAURLDownload" }

    /// The request to perform.
    var request: URLRequest {
        switch source {
        case .request(let request):
            return request
        case .described(let url, let headerLines, let networkAccess):
            var request = URLRequest(url: URL(string: url) ?? URL(fileURLWithPath: "/"))
            for line in headerLines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                request.setValue(
                    line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces),
                    forHTTPHeaderField: String(line[..<colon]))
            }
            request.setNetworkAccess(networkAccess, avoided: true)
            return request
        }
    }

    /// The request's URL as text, as the host and the C ABI carry it.
    var urlString: String? {
        switch source {
        case .request(let request): request.url?.absoluteString
        case .described(let url, _, _): url
        }
    }

    /// The networks the download avoids (`URLRequest.allowsExpensiveNetworkAccess` and its sibling).
    var networkAccess: NetworkAccess {
        switch source {
        case .request(let request): request.networkAccess
        case .described(_, _, let networkAccess): networkAccess
        }
    }

    /// The request's headers as `Name: value` lines, sorted by name; bahost's network access header is not one.
    var headerLines: [String] {
        switch source {
        case .request(let request):
            (request.allHTTPHeaderFields ?? [:])
                .filter { $0.key.caseInsensitiveCompare(URLRequest.networkAccessHeader) != .orderedSame }
                .sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        case .described(_, let headerLines, _):
            headerLines
        }
    }
}
