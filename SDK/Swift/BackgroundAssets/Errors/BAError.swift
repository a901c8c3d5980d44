import CBAExtension

/// Apple's error domain for Background Assets errors.
public let BAErrorDomain: String = "BAErrorDomain"

/// Apple's Background Assets error codes, with Apple's raw values. Errors are thrown as `NSError`s in
/// `BAErrorDomain` whose `code` is one of these.
public enum BAErrorCode: Int, Sendable, Hashable {
    case downloadInvalid = 0
    case callFromExtensionNotAllowed = 50
    case callFromInactiveProcessNotAllowed = 51
    case callerConnectionNotAccepted = 55
    case callerConnectionInvalid = 56
    case downloadAlreadyScheduled = 100
    case downloadNotScheduled = 101
    case downloadFailedToStart = 102
    case downloadAlreadyFailed = 103
    case downloadEssentialDownloadNotPermitted = 109
    case downloadBackgroundActivityProhibited = 111
    case downloadWouldExceedAllowance = 112
    case downloadDoesNotExist = 113
    case sessionDownloadDisallowedByDomain = 202
    case sessionDownloadDisallowedByAllowance = 203
    case sessionDownloadAllowanceExceeded = 204
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
