import CBAExtension
import Vocabulary

/// An in-progress or concluded asset download (Apple's `BADownload`).
///
/// Copies keep every property; two downloads are equal when their `identifier` and `uniqueIdentifier` are.
open class BADownload: NSObject, NSCopying, @unchecked Sendable {  // safe: every property is set before it is shared
    /// A client-set priority that orders downloads within the app. Apple does not publish the bounds' values;
    /// bahost's are 0, 50 and 100 (`BA_DOWNLOAD_PRIORITY_*` in the C ABI).
    public struct Priority: RawRepresentable, Hashable, Sendable {
        public var rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// A priority of `rawValue`, which should lie between `min` and `max`.
        public init(_ rawValue: Int) { self.rawValue = rawValue }

        /// The lowest priority (0).
        public static let min = Priority(Int(BA_DOWNLOAD_PRIORITY_MIN))
        /// The priority to use when it does not matter (50).
        public static let `default` = Priority(Int(BA_DOWNLOAD_PRIORITY_DEFAULT))
        /// The highest priority (100).
        public static let max = Priority(Int(BA_DOWNLOAD_PRIORITY_MAX))
    }

    /// Apple's `BADownload.State`, same raw values.
    public enum State: Int, Sendable {
        /// The download failed.
        case failed = -1
        /// The download was created and is not scheduled yet.
        case created = 0
        /// The download is scheduled and waits to run.
        case waiting = 1
        /// The download is in progress.
        case downloading = 2
        /// The download finished.
        case finished = 3
    }

    /// The current state of the represented download.
    public internal(set) var state: State
    /// The app-specific identifier that tracks the asset across app and extension launches.
    public let identifier: String
    /// The system-provided identifier of this download object, "<ClassName>.<appGroupID>.<UUID>".
    public let uniqueIdentifier: String
    /// Where the download stands in the app's queue; higher goes first.
    public let priority: Priority
    /// Essential downloads happen during install or update and block the app's launch until they finish.
    public internal(set) var isEssential: Bool

    let applicationGroupIdentifier: String
    let fileSize: Int

    init(
        identifier: String, uniqueIdentifier: String? = nil, state: State = .created, priority: Priority,
        isEssential: Bool, applicationGroupIdentifier: String, fileSize: Int
    ) {
        self.identifier = identifier
        self.uniqueIdentifier =
            uniqueIdentifier ?? "\(Self.className).\(applicationGroupIdentifier).\(UUIDText.random())"
        self.state = state
        self.priority = priority
        self.isEssential = isEssential
        self.applicationGroupIdentifier = applicationGroupIdentifier
        self.fileSize = fileSize
    }

    /// A copy of every property, of the same class.
    required public init(copying other: BADownload) {
        identifier = other.identifier
        uniqueIdentifier = other.uniqueIdentifier
        state = other.state
        priority = other.priority
        isEssential = other.isEssential
        applicationGroupIdentifier = other.applicationGroupIdentifier
        fileSize = other.fileSize
    }

    class var className: String { "BADownload" }

    open func copy(with zone: NSZone? = nil) -> Any { type(of: self).init(copying: self) }

    /// A copy with `isEssential == false`, for re-queueing a failed essential download with the manager.
    public func removingEssential() -> Self {
        let copy = type(of: self).init(copying: self)
        copy.isEssential = false
        return copy
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? BADownload else { return false }
        return identifier == other.identifier && uniqueIdentifier == other.uniqueIdentifier
    }

    open override var hash: Int {
        var hasher = Hasher()
        hasher.combine(identifier)
        hasher.combine(uniqueIdentifier)
        return hasher.finalize()
    }

    open override var description: String {
        "<\(Self.className) \(identifier) state=\(state) essential=\(isEssential)>"
    }
}

/// The app's manifest download, which an extension only ever meets in `backgroundDownload(_:failedWithError:)`
/// (Apple's private `BAManifestDownload`): code that filters on `type(of:) == BAURLDownload.self` skips it.
final class BAManifestDownload: BADownload, @unchecked Sendable {  // safe: as BADownload, nothing added
    override class var className: String { "BAManifestDownload" }
}
