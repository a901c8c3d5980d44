import AppClient
import CBAApp
import CBAExtension
import Glibc

// ba/app.h: exclusive control between the app and its extension, and the app group's container.

@_cdecl("ba_app_acquire_exclusive_control")
public func ba_app_acquire_exclusive_control(
    _ app: OpaquePointer?, _ timeoutMilliseconds: Int64, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { try $0.client.acquireExclusiveControl(timeoutMilliseconds: timeoutMilliseconds) }
}

@_cdecl("ba_app_release_exclusive_control")
public func ba_app_release_exclusive_control(_ app: OpaquePointer?) {
    AppConnection.find(app)?.client.releaseExclusiveControl()
}

@_cdecl("ba_app_with_exclusive_control")
public func ba_app_with_exclusive_control(
    _ app: OpaquePointer?, _ timeoutMilliseconds: Int64, _ handler: ba_exclusive_control_handler_t?,
    _ context: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    guard let connection = AppConnection.find(app) else { return unknownHandle(error) }
    guard let handler else { return ErrorOut.misuse(error, EINVAL, "ba_app_with_exclusive_control: handler is NULL") }
    let context = UncheckedContext(pointer: context)
    Threads.start {
        do {
            try connection.client.acquireExclusiveControl(timeoutMilliseconds: timeoutMilliseconds)
        } catch let failure {
            var described = ErrorOut.make(failure)
            _ = connection.callbacks.run { handler(context.pointer, &described) }
            return
        }
        _ = connection.callbacks.run { handler(context.pointer, nil) }
        connection.client.releaseExclusiveControl()
    }
    return true
}

@_cdecl("ba_app_set_playing")
public func ba_app_set_playing(
    _ app: OpaquePointer?, _ playing: Bool, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in try connection.client.setPlaying(playing) }
}

@_cdecl("ba_app_container_path")
public func ba_app_container_path(
    _ app: OpaquePointer?, _ group: UnsafePointer<CChar>?, _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int,
    _ length: UnsafeMutablePointer<Int>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        guard let group else { throw ErrorOut.Misuse(code: EINVAL, message: "ba_app_container_path: the group is NULL") }
        guard let path = connection.client.containerPath(forGroup: String(cString: group)) else {
            throw ErrorOut.Misuse(code: ENOENT, message: "the app group is not this app's (or the service is not reachable)")
        }
        try ErrorOut.copy(path, into: buffer, size: size, length: length)
    }
}

/// The app's context pointer, carried to the thread that calls its handler; the app promised it stays valid.
private struct UncheckedContext: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
}
