import AppClient
import CBAApp
import CBAExtension
import Glibc
import ServiceWire
import Vocabulary

// ba/app_asset_packs.h: Apple's AssetPackManager calls, on the connection's `AppClient` (its requests, and the
// installed packs' files through `AssetPackFiles`).

private func text(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> String {
    guard let pointer else { throw ErrorOut.Misuse(code: EINVAL, message: "\(name) is NULL") }
    return String(cString: pointer)
}

/// Calls `body` with the pack as a borrowed `ba_asset_pack_t`.
private func withPack<R>(_ pack: AssetPackInfo, _ body: (UnsafePointer<ba_asset_pack_t>) -> R) -> R {
    let userInfo = pack.userInfo.map { String(decoding: $0, as: UTF8.self) }
    return withCStrings(pack.id, userInfo) { texts in
        var c = ba_asset_pack_t(
            struct_size: UInt32(MemoryLayout<ba_asset_pack_t>.size), id: texts[0], version: Int64(pack.version),
            download_size: pack.downloadSize, user_info_json: texts[1])
        return body(&c)
    }
}

extension AppConnection {
    /// The pack the server offers under `id`; Apple's assetPackNotFound when it offers none.
    fileprivate func offeredPack(_ id: String) throws -> AssetPackInfo {
        guard let pack = try catalogue().packs.first(where: { $0.id == id }) else { throw AssetPackFiles.packNotFound(id) }
        return pack
    }

    /// The installed packs' files, in the container the service names.
    fileprivate func files() throws -> AssetPackFiles { try AssetPackFiles(client) }
}

/// The service's assetPackNotFound for `id` in the words the library gives it everywhere.
private func naming(_ id: String, _ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as HostError
        where error.domain == ManagedErrorCode.domain && error.code == ManagedErrorCode.assetPackNotFound
    {
        throw AssetPackFiles.packNotFound(id)
    }
}

@_cdecl("ba_app_asset_packs")
public func ba_app_asset_packs(
    _ app: OpaquePointer?, _ visit: ba_asset_pack_visitor_t?, _ context: UnsafeMutableRawPointer?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        guard let visit else { throw ErrorOut.Misuse(code: EINVAL, message: "ba_app_asset_packs: visit is NULL") }
        for pack in try connection.catalogue().packs.sorted(by: { $0.id < $1.id }) { withPack(pack) { visit(context, $0) } }
    }
}

@_cdecl("ba_app_asset_pack")
public func ba_app_asset_pack(
    _ app: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ visit: ba_asset_pack_visitor_t?,
    _ context: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let id = try text(id, "the pack's ID")
        guard let visit else { throw ErrorOut.Misuse(code: EINVAL, message: "ba_app_asset_pack: visit is NULL") }
        withPack(try connection.offeredPack(id)) { visit(context, $0) }
    }
}

@_cdecl("ba_app_asset_pack_status")
public func ba_app_asset_pack_status(
    _ app: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ status: UnsafeMutablePointer<Int64>?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let id = try text(id, "the pack's ID")
        guard let status else { throw ErrorOut.Misuse(code: EINVAL, message: "ba_app_asset_pack_status: status is NULL") }
        _ = try connection.offeredPack(id)
        try naming(id) { status.pointee = Int64(try connection.client.assetPackStatus(id)) }
    }
}

/// Apple's `AssetPack.Status.downloaded`.
private let downloadedStatus: Int64 = 64

@_cdecl("ba_app_asset_pack_local_status")
public func ba_app_asset_pack_local_status(_ app: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> Int64 {
    ba_app_asset_pack_is_available_locally(app, id) ? downloadedStatus : 0
}

@_cdecl("ba_app_asset_pack_is_available_locally")
public func ba_app_asset_pack_is_available_locally(_ app: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> Bool {
    guard let connection = AppConnection.find(app), let id, let files = try? connection.files() else { return false }
    return files.isInstalled(String(cString: id))
}

@_cdecl("ba_app_set_asset_pack_observer")
public func ba_app_set_asset_pack_observer(
    _ app: OpaquePointer?, _ handler: ba_asset_pack_update_handler_t?, _ context: UnsafeMutableRawPointer?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        connection.observePacks(handler.map { PackObserver(handler: $0, context: context) })
    }
}

@_cdecl("ba_app_ensure_asset_pack")
public func ba_app_ensure_asset_pack(
    _ app: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ requireLatest: Bool, _ done: ba_asset_pack_completion_t?,
    _ context: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let id = try text(id, "the pack's ID")
        guard let done else { throw ErrorOut.Misuse(code: EINVAL, message: "ba_app_ensure_asset_pack: done is NULL") }
        let completion = PackCompletion(done: done, context: context)
        // On a thread of its own: the call returns when the pack is installed, minutes later for a large one.
        Threads.start {
            var failure: ba_error_t?
            do {
                _ = try connection.offeredPack(id)
                try naming(id) { try connection.client.ensureAssetPack(id, requireLatestVersion: requireLatest) }
            } catch {
                failure = ErrorOut.make(error)
            }
            connection.callbacks.post {
                id.withCString { name in
                    if var failure { completion.done(completion.context, name, &failure) }
                    else { completion.done(completion.context, name, nil) }
                }
            }
        }
    }
}

@_cdecl("ba_app_cancel_asset_pack_download")
public func ba_app_cancel_asset_pack_download(
    _ app: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        _ = try connection.client.request(.cancelAssetPackDownload(try text(id, "the pack's ID")))
    }
}

@_cdecl("ba_app_check_for_asset_pack_updates")
public func ba_app_check_for_asset_pack_updates(
    _ app: OpaquePointer?, _ updating: ba_asset_pack_id_visitor_t?, _ removed: ba_asset_pack_id_visitor_t?,
    _ context: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let (updatingIDs, removedIDs) = try connection.client.checkForAssetPackUpdates()
        for id in Set(updatingIDs).sorted() { id.withCString { updating?(context, $0) } }
        for id in Set(removedIDs).sorted() { id.withCString { removed?(context, $0) } }
    }
}

@_cdecl("ba_app_remove_asset_pack")
public func ba_app_remove_asset_pack(
    _ app: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let id = try text(id, "the pack's ID")
        try naming(id) { _ = try connection.client.request(.removeAssetPack(id)) }
    }
}

/// The file at `path`, read whole into a `malloc`ed block handed to the app.
private func give(
    _ path: String, _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ size: UnsafeMutablePointer<Int>?
) throws {
    guard let out else { throw ErrorOut.Misuse(code: EINVAL, message: "the data's out-parameter is NULL") }
    func failure(_ what: String) -> HostError { HostError.system("\(what) \(path)") }
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw failure("cannot open") }
    defer { close(descriptor) }
    var status = stat()
    guard fstat(descriptor, &status) == 0 else { throw failure("cannot read") }
    var capacity = max(Int(status.st_size), 1)
    guard var block = malloc(capacity) else { throw ErrorOut.Misuse(code: ENOMEM, message: "no memory for \(capacity) bytes") }
    var count = 0
    while true {
        if count == capacity {
            capacity *= 2
            guard let grown = realloc(block, capacity) else {
                free(block)
                throw ErrorOut.Misuse(code: ENOMEM, message: "no memory for \(capacity) bytes")
            }
            block = grown
        }
        let got = read(descriptor, block + count, capacity - count)
        if got < 0 && errno == EINTR { continue }
        if got < 0 {
            let error = failure("cannot read")
            free(block)
            throw error
        }
        if got == 0 { break }
        count += got
    }
    out.pointee = block
    size?.pointee = count
}

@_cdecl("ba_app_asset_pack_contents")
public func ba_app_asset_pack_contents(
    _ app: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ pack: UnsafePointer<CChar>?,
    _ data: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ size: UnsafeMutablePointer<Int>?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let path = try text(path, "the path")
        try give(try connection.files().locate(path, in: pack.map { String(cString: $0) }), data, size)
    }
}

@_cdecl("ba_app_asset_pack_localized_contents")
public func ba_app_asset_pack_localized_contents(
    _ app: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ language: UnsafePointer<CChar>?,
    _ data: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ size: UnsafeMutablePointer<Int>?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let path = try text(path, "the path")
        let language = try text(language, "the language")
        try give(try connection.files().locate(path, localizedFor: language), data, size)
    }
}

@_cdecl("ba_app_asset_pack_open")
public func ba_app_asset_pack_open(
    _ app: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ pack: UnsafePointer<CChar>?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Int32 {
    var descriptor: Int32 = -1
    _ = withConnection(app, error) { connection in
        let path = try text(path, "the path")
        let file = try connection.files().locate(path, in: pack.map { String(cString: $0) })
        descriptor = open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw HostError.system("cannot open \(file)")
        }
    }
    return descriptor
}

@_cdecl("ba_app_asset_pack_path")
public func ba_app_asset_pack_path(
    _ app: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int,
    _ length: UnsafeMutablePointer<Int>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let found = try connection.files().view(of: try text(path, "the path"))
        try ErrorOut.copy(found, into: buffer, size: size, length: length)
    }
}

@_cdecl("ba_app_asset_pack_language")
public func ba_app_asset_pack_language(
    _ app: OpaquePointer?, _ which: Int32, _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int,
    _ length: UnsafeMutablePointer<Int>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let language: String
        switch which {
        case Int32(BA_ASSET_PACK_LANGUAGE_PRIMARY.rawValue): language = try connection.catalogue().primary ?? ""
        case Int32(BA_ASSET_PACK_LANGUAGE_RESOLVED.rawValue): language = connection.client.resolvedAssetPackLanguage ?? ""
        default:
            throw ErrorOut.Misuse(code: EINVAL, message: "ba_app_asset_pack_language: which \(which) is unknown")
        }
        try ErrorOut.copy(language, into: buffer, size: size, length: length)
    }
}

@_cdecl("ba_app_asset_pack_languages")
public func ba_app_asset_pack_languages(
    _ app: OpaquePointer?, _ which: Int32, _ visit: ba_asset_pack_language_visitor_t?, _ context: UnsafeMutableRawPointer?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        guard let visit else { throw ErrorOut.Misuse(code: EINVAL, message: "ba_app_asset_pack_languages: visit is NULL") }
        let languages: [String]
        switch which {
        case Int32(BA_ASSET_PACK_LANGUAGES_AVAILABLE.rawValue):
            languages = Set(try connection.catalogue().packs.compactMap(\.language)).sorted()
        case Int32(BA_ASSET_PACK_LANGUAGES_LOCAL.rawValue):
            languages = Set((try? connection.files())?.installedLanguages().values.map { $0 } ?? []).sorted()
        default:
            throw ErrorOut.Misuse(code: EINVAL, message: "ba_app_asset_pack_languages: which \(which) is unknown")
        }
        for language in languages { language.withCString { visit(context, $0) } }
    }
}

@_cdecl("ba_app_set_asset_pack_language")
public func ba_app_set_asset_pack_language(
    _ app: OpaquePointer?, _ language: UnsafePointer<CChar>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        // As Apple's setter: nothing to throw; the service keeps the choice.
        _ = try? connection.client.request(.setAssetPackLanguage(language.map { String(cString: $0) }))
    }
}

@_cdecl("ba_app_reconcile_asset_pack_languages")
public func ba_app_reconcile_asset_pack_languages(_ app: OpaquePointer?, _ error: UnsafeMutablePointer<ba_error_t>?)
    -> Bool
{
    withConnection(app, error) { try $0.client.reconcileAssetPackLanguages() }
}

/// The app's observer: each pack update the connection receives becomes a call of its handler.
struct PackObserver: @unchecked Sendable {  // the app's function and context, called on the callback thread only
    let handler: ba_asset_pack_update_handler_t
    let context: UnsafeMutableRawPointer?

    /// [the connection's inbox] Posts one update to `callbacks`.
    func post(_ pack: AssetPackInfo, _ update: WirePackUpdate, to callbacks: CallbackQueue) {
        let (kind, completed, total, failure): (ba_asset_pack_update_kind_t, Int64, Int64, ba_error_t?) =
            switch update {
            case .began: (BA_ASSET_PACK_UPDATE_BEGAN, 0, 0, nil)
            case .paused: (BA_ASSET_PACK_UPDATE_PAUSED, 0, 0, nil)
            case .downloading(let completed, let total): (BA_ASSET_PACK_UPDATE_DOWNLOADING, completed, total, nil)
            case .finished: (BA_ASSET_PACK_UPDATE_FINISHED, 0, 0, nil)
            case .failed(let error): (BA_ASSET_PACK_UPDATE_FAILED, 0, 0, ErrorOut.make(error))
            }
        let handler = handler, context = context
        callbacks.post {
            withPack(pack) { described in
                var value = ba_asset_pack_update_t(
                    struct_size: UInt32(MemoryLayout<ba_asset_pack_update_t>.size), kind: Int32(kind.rawValue),
                    pack: described, completed: completed, total: total, error: nil)
                if var failure {
                    withUnsafePointer(to: &failure) { value.error = $0; handler(context, &value) }
                } else {
                    handler(context, &value)
                }
            }
        }
    }
}

/// An ensure's completion, carried to the callback thread.
private struct PackCompletion: @unchecked Sendable {  // the app's function and context, called once there
    let done: ba_asset_pack_completion_t
    let context: UnsafeMutableRawPointer?
}
