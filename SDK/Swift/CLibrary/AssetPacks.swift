@_spi(Bindings) import BackgroundAssets
import CBAApp
import CBAExtension
import Synchronization
import SystemPackage

// ba/app_asset_packs.h: Apple's AssetPackManager calls.

/// Runs an async manager call to its end on the calling thread (a C thread, never one of Swift's pool).
private func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Result<T, any Error>?>(nil)
    Task {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await work()) } catch { outcome = .failure(error) }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}

private func text(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> String {
    guard let pointer else { throw ErrorOut.Misuse(code: EINVAL, message: "\(name) is NULL") }
    return String(cString: pointer)
}

/// Calls `body` with the pack as a borrowed `ba_asset_pack_t`.
private func withPack<R>(_ pack: AssetPack, _ body: (UnsafePointer<ba_asset_pack_t>) -> R) -> R {
    let userInfo = pack.userInfo.map { String(decoding: $0, as: UTF8.self) }
    return withCStrings(pack.id, userInfo) { texts in
        var c = ba_asset_pack_t(
            struct_size: UInt32(MemoryLayout<ba_asset_pack_t>.size), id: texts[0], version: Int64(pack.version),
            download_size: Int64(pack.downloadSize), user_info_json: texts[1])
        return body(&c)
    }
}

@_cdecl("ba_app_asset_packs")
public func ba_app_asset_packs(
    _ app: OpaquePointer?, _ visit: ba_asset_pack_visitor_t?, _ context: UnsafeMutableRawPointer?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        guard let visit else { throw ErrorOut.Misuse(code: EINVAL, message: "ba_app_asset_packs: visit is NULL") }
        let manager = try connection.packs()
        let packs = try blocking { try await manager.manifest.assetPacks }.sorted { $0.id < $1.id }
        for pack in packs { withPack(pack) { visit(context, $0) } }
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
        let manager = try connection.packs()
        let pack = try blocking { try await manager.assetPack(withID: id) }
        withPack(pack) { visit(context, $0) }
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
        let manager = try connection.packs()
        let raw = try blocking { try await manager.status(relativeTo: try await manager.assetPack(withID: id)).rawValue }
        status.pointee = Int64(raw)
    }
}

@_cdecl("ba_app_asset_pack_local_status")
public func ba_app_asset_pack_local_status(_ app: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> Int64 {
    ba_app_asset_pack_is_available_locally(app, id) ? Int64(AssetPack.Status.downloaded.rawValue) : 0
}

@_cdecl("ba_app_asset_pack_is_available_locally")
public func ba_app_asset_pack_is_available_locally(_ app: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> Bool {
    guard let connection = AppConnection.find(app), let id, let manager = try? connection.packs() else { return false }
    return manager.assetPackIsAvailableLocally(withID: String(cString: id))
}

@_cdecl("ba_app_set_asset_pack_observer")
public func ba_app_set_asset_pack_observer(
    _ app: OpaquePointer?, _ handler: ba_asset_pack_update_handler_t?, _ context: UnsafeMutableRawPointer?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        try connection.observePacks(handler.map { PackObserver(handler: $0, context: context) })
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
        let manager = try connection.packs()
        let callbacks = connection.callbacks
        let completion = PackCompletion(done: done, context: context)
        Task {
            var failure: ba_error_t?
            do {
                try await manager.ensureLocalAvailability(
                    of: try await manager.assetPack(withID: id), requireLatestVersion: requireLatest)
            } catch {
                failure = ErrorOut.make(error)
            }
            callbacks.post {
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
        try connection.packs().cancelDownload(ofAssetPackWithID: try text(id, "the pack's ID"))
    }
}

@_cdecl("ba_app_check_for_asset_pack_updates")
public func ba_app_check_for_asset_pack_updates(
    _ app: OpaquePointer?, _ updating: ba_asset_pack_id_visitor_t?, _ removed: ba_asset_pack_id_visitor_t?,
    _ context: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let manager = try connection.packs()
        let (updatingIDs, removedIDs) = try blocking {
            let result = try await manager.checkForUpdates()
            return (result.updatingIDs.sorted(), result.removedIDs.sorted())
        }
        for id in updatingIDs { id.withCString { updating?(context, $0) } }
        for id in removedIDs { id.withCString { removed?(context, $0) } }
    }
}

@_cdecl("ba_app_remove_asset_pack")
public func ba_app_remove_asset_pack(
    _ app: OpaquePointer?, _ id: UnsafePointer<CChar>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let id = try text(id, "the pack's ID")
        let manager = try connection.packs()
        try blocking { try await manager.remove(assetPackWithID: id) }
    }
}

/// Hands `data` to the app as a `malloc`ed copy.
private func give(_ data: Data, _ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ size: UnsafeMutablePointer<Int>?)
    throws
{
    guard let out else { throw ErrorOut.Misuse(code: EINVAL, message: "the data's out-parameter is NULL") }
    guard let copy = malloc(max(data.count, 1)) else {
        throw ErrorOut.Misuse(code: ENOMEM, message: "no memory for \(data.count) bytes")
    }
    data.withUnsafeBytes { if let base = $0.baseAddress { copy.copyMemory(from: base, byteCount: data.count) } }
    out.pointee = copy
    size?.pointee = data.count
}

@_cdecl("ba_app_asset_pack_contents")
public func ba_app_asset_pack_contents(
    _ app: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ pack: UnsafePointer<CChar>?,
    _ data: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ size: UnsafeMutablePointer<Int>?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let path = try text(path, "the path")
        let contents = try connection.packs().contents(
            at: FilePath(path), searchingInAssetPackWithID: pack.map { String(cString: $0) })
        try give(contents, data, size)
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
        let language = Locale.Language(identifier: try text(language, "the language"))
        try give(try connection.packs().contents(at: FilePath(path), asLocalizedFor: language), data, size)
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
        descriptor = try connection.packs().descriptor(
            for: FilePath(path), searchingInAssetPackWithID: pack.map { String(cString: $0) }
        ).rawValue
    }
    return descriptor
}

@_cdecl("ba_app_asset_pack_path")
public func ba_app_asset_pack_path(
    _ app: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int,
    _ length: UnsafeMutablePointer<Int>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let url = try connection.packs().url(for: FilePath(try text(path, "the path")))
        try ErrorOut.copy(url.path, into: buffer, size: size, length: length)
    }
}

@_cdecl("ba_app_asset_pack_language")
public func ba_app_asset_pack_language(
    _ app: OpaquePointer?, _ which: Int32, _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int,
    _ length: UnsafeMutablePointer<Int>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    withConnection(app, error) { connection in
        let manager = try connection.packs()
        let language: String
        switch which {
        case Int32(BA_ASSET_PACK_LANGUAGE_PRIMARY.rawValue):
            language = try blocking { try await manager.manifest.primaryLanguage?.minimalIdentifier ?? "" }
        case Int32(BA_ASSET_PACK_LANGUAGE_RESOLVED.rawValue):
            language = manager.resolvedLanguageID ?? ""
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
        let manager = try connection.packs()
        let languages: [String]
        switch which {
        case Int32(BA_ASSET_PACK_LANGUAGES_AVAILABLE.rawValue):
            languages = try blocking { try await manager.manifest.availableLanguages.map(\.minimalIdentifier).sorted() }
        case Int32(BA_ASSET_PACK_LANGUAGES_LOCAL.rawValue):
            languages = try blocking { await manager.locallyAvailableLanguages.map(\.minimalIdentifier).sorted() }
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
        let manager = try connection.packs()
        manager.resolvedLanguageID = language.map { String(cString: $0) }
    }
}

@_cdecl("ba_app_reconcile_asset_pack_languages")
public func ba_app_reconcile_asset_pack_languages(_ app: OpaquePointer?, _ error: UnsafeMutablePointer<ba_error_t>?)
    -> Bool
{
    withConnection(app, error) { connection in
        let manager = try connection.packs()
        try blocking { try await manager.reconcilePreferredLanguages() }
    }
}

/// The app's observer, carried to the task that reads the updates.
struct PackObserver: @unchecked Sendable {  // the app's function and context, called on the callback thread only
    let handler: ba_asset_pack_update_handler_t
    let context: UnsafeMutableRawPointer?

    /// Reads every pack's updates and posts each to `callbacks`, until cancelled.
    func start(_ manager: AssetPackManager, _ callbacks: CallbackQueue) -> Task<Void, Never> {
        Task {
            for await update in await manager.statusUpdates {
                let (kind, pack, completed, total, failure) = Self.describe(update)
                callbacks.post {
                    withPack(pack) { described in
                        var value = ba_asset_pack_update_t(
                            struct_size: UInt32(MemoryLayout<ba_asset_pack_update_t>.size), kind: kind,
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
    }

    private static func describe(_ update: AssetPackManager.DownloadStatusUpdate)
        -> (Int32, AssetPack, Int64, Int64, ba_error_t?)
    {
        switch update {
        case .began(let pack): (Int32(BA_ASSET_PACK_UPDATE_BEGAN.rawValue), pack, 0, 0, nil)
        case .paused(let pack): (Int32(BA_ASSET_PACK_UPDATE_PAUSED.rawValue), pack, 0, 0, nil)
        case .downloading(let pack, let progress):
            (Int32(BA_ASSET_PACK_UPDATE_DOWNLOADING.rawValue), pack, progress.completedUnitCount, progress.totalUnitCount, nil)
        case .finished(let pack): (Int32(BA_ASSET_PACK_UPDATE_FINISHED.rawValue), pack, 0, 0, nil)
        case .failed(let pack, let error): (Int32(BA_ASSET_PACK_UPDATE_FAILED.rawValue), pack, 0, 0, ErrorOut.make(error))
        }
    }
}

/// An ensure's completion, carried to the callback thread.
private struct PackCompletion: @unchecked Sendable {  // the app's function and context, called once there
    let done: ba_asset_pack_completion_t
    let context: UnsafeMutableRawPointer?
}
