import CBAExtension

/// Apple's error domain for Background Assets errors.
public let BAErrorDomain: String = "BAErrorDomain"

/// Apple's Background Assets error codes, with Apple's raw values. Errors are thrown as `NSError`s in
/// `BAErrorDomain` whose `code` is one of these.
public enum BAErrorCode: Int, Sendable, Hashable {
    /// Invalid error code.
    case downloadInvalid = 0
    /// Calling this method from the download extension is not allowed.
    case callFromExtensionNotAllowed = 50
    /// Calling this method from an inactive process is not allowed.
    case callFromInactiveProcessNotAllowed = 51
    /// The caller is not accepted based on its application or extension identifier.
    case callerConnectionNotAccepted = 55
    /// The connection to the background asset system service is invalid.
    case callerConnectionInvalid = 56
    /// A download with the requested identifier has already been scheduled.
    case downloadAlreadyScheduled = 100
    /// The requested download is not scheduled.
    case downloadNotScheduled = 101
    /// The requested download failed to start.
    case downloadFailedToStart = 102
    /// The requested download has failed.
    case downloadAlreadyFailed = 103
    /// The download is marked as essential, which is prohibited in this context.
    case downloadEssentialDownloadNotPermitted = 109
    /// The download could not be enqueued: background activity is prohibited (power saver, or background refresh off).
    case downloadBackgroundActivityProhibited = 111
    /// The download cannot be enqueued: it would exceed the download allowance.
    case downloadWouldExceedAllowance = 112
    /// The requested download operation failed because the download object did not exist.
    case downloadDoesNotExist = 113
    /// The requested URL is not permitted to be downloaded until the application is launched (the domain allow list).
    case sessionDownloadDisallowedByDomain = 202
    /// The requested download will not be allowed due to running out of download allowance.
    case sessionDownloadDisallowedByAllowance = 203
    /// The requested download failed because the download allowance has been exceeded.
    case sessionDownloadAllowanceExceeded = 204
    /// The requested download cannot be scheduled before the app has been launched.
    case sessionDownloadNotPermittedBeforeAppLaunch = 206
}

extension NSError {
    /// An error as Background Assets reports it.
    static func backgroundAssets(_ code: BAErrorCode, _ message: String) -> NSError {
        NSError(domain: BAErrorDomain, code: code.rawValue, userInfo: [NSLocalizedDescriptionKey: message])
    }
}

extension NSError {
    /// An error as the C ABI carried it.
    convenience init(abi error: ba_error_t) {
        var copy = error
        let domain = withUnsafeBytes(of: &copy.domain) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        let message = withUnsafeBytes(of: &copy.message) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        self.init(domain: domain, code: Int(error.code), userInfo: [NSLocalizedDescriptionKey: message])
    }
}
