import CBAApp
import CBAExtension
import Glibc
import Vocabulary

// ba/app.h: connecting, the delegate, and how callbacks arrive.

/// The 1.0 sizes (pinned in SDK/C/abi_layout.c): a struct smaller than these was not filled by a caller of this API.
private let optionsSize10 = 24
private let delegateSize10 = 64

@_cdecl("ba_app_library_version")
public func ba_app_library_version() -> ba_version_t {
    ba_version_t(major: BA_APP_API_VERSION_MAJOR, minor: BA_APP_API_VERSION_MINOR)
}

@_cdecl("ba_app_connect")
public func ba_app_connect(
    _ options: UnsafePointer<ba_app_options_t>?, _ app: UnsafeMutablePointer<OpaquePointer?>?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    guard let app else { return ErrorOut.misuse(error, EINVAL, "ba_app_connect: the handle's out-parameter is NULL") }
    app.pointee = nil
    var settings = ba_app_options_t()
    if let options {
        guard Int(options.pointee.struct_size) >= optionsSize10 else {
            return ErrorOut.misuse(
                error, EINVAL,
                "ba_app_options_t.struct_size is \(options.pointee.struct_size); this library needs \(optionsSize10) "
                    + "(set it to sizeof(ba_app_options_t))")
        }
        settings = options.pointee
    }
    let mode: CallbackQueue.Mode
    switch settings.callback_mode {
    case Int32(BA_APP_CALLBACKS_ON_LIBRARY_THREAD.rawValue): mode = .libraryThread
    case Int32(BA_APP_CALLBACKS_ON_DISPATCH.rawValue): mode = .dispatch
    default:
        return ErrorOut.misuse(error, EINVAL, "ba_app_options_t.callback_mode \(settings.callback_mode) is unknown")
    }
    let connection: AppConnection
    let socketPath = settings.socket_path.map { String(cString: $0) }
    let appIdentifier = settings.app_identifier.map { String(cString: $0) }
    do {
        connection = AppConnection(
            callbacks: try CallbackQueue(mode: mode), socketPath: socketPath, appIdentifier: appIdentifier)
    } catch let failure {
        ErrorOut.fill(error, failure)
        return false
    }
    guard let handle = AppConnection.register(connection) else {
        return ErrorOut.invalidConnection(
            error, "this process is already connected (one ba_app_t at a time: ba_app_disconnect the other first)")
    }
    do throws(HostError) {
        try connection.client.connect()
    } catch let failure {
        _ = AppConnection.unregister(handle)
        connection.callbacks.close()
        ErrorOut.fill(error, failure)
        return false
    }
    app.pointee = handle
    return true
}

@_cdecl("ba_app_disconnect")
public func ba_app_disconnect(_ app: OpaquePointer?) {
    AppConnection.unregister(app)?.close()
}

@_cdecl("ba_app_set_delegate")
public func ba_app_set_delegate(
    _ app: OpaquePointer?, _ delegate: UnsafePointer<ba_app_delegate_t>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    guard let connection = AppConnection.find(app) else { return unknownHandle(error) }
    if let delegate, Int(delegate.pointee.struct_size) < delegateSize10 {
        return ErrorOut.misuse(
            error, EINVAL,
            "ba_app_delegate_t.struct_size is \(delegate.pointee.struct_size); this library needs \(delegateSize10) "
                + "(set it to sizeof(ba_app_delegate_t))")
    }
    connection.setDelegate(delegate?.pointee)
    return true
}

@_cdecl("ba_app_fd")
public func ba_app_fd(_ app: OpaquePointer?) -> Int32 {
    AppConnection.find(app)?.callbacks.descriptor ?? -1
}

@_cdecl("ba_app_dispatch")
public func ba_app_dispatch(_ app: OpaquePointer?) -> Int32 {
    guard let callbacks = AppConnection.find(app)?.callbacks, callbacks.mode == .dispatch else { return -1 }
    return Int32(clamping: callbacks.dispatch())
}

/// The answer for a handle that is not live: never connected, or disconnected.
func unknownHandle(_ error: UnsafeMutablePointer<ba_error_t>?) -> Bool {
    ErrorOut.invalidConnection(
        error, "the ba_app_t is not connected (disconnected, or never returned by ba_app_connect)")
}

/// Runs a call for a live handle, filling `error` with what it threw; false for a handle that is not live.
func withConnection(
    _ app: OpaquePointer?, _ error: UnsafeMutablePointer<ba_error_t>?, _ body: (AppConnection) throws -> Void
) -> Bool {
    guard let connection = AppConnection.find(app) else { return unknownHandle(error) }
    do {
        try body(connection)
        return true
    } catch let failure {
        ErrorOut.fill(error, failure)
        return false
    }
}
