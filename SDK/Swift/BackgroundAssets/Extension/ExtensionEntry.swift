import CBAExtension
import Vocabulary

/// The C entry of a Swift extension: what the exported `ba_extension_entry` symbol returns.
///
/// ```swift
/// @_cdecl("ba_extension_entry") public func entry() -> UnsafeRawPointer { baExtensionEntry(MyExtension.self) }
/// ```
/// Each extension image links its own copy of this SDK, so its globals belong to that one extension.
public func baExtensionEntry<Extension: BADownloaderExtension>(_ type: Extension.Type) -> UnsafeRawPointer {
    ExtensionBridge.prepare(type)
}

/// Bridges the C ABI's entry points to the extension's Swift methods. Thread rules are the ABI's: `init` runs
/// once, first, on the loader thread; entry points run one at a time on the entry thread; `will_terminate` may
/// run concurrently on another.
enum ExtensionBridge {
    nonisolated(unsafe) static var extensionType: (any BADownloaderExtension.Type)?
    nonisolated(unsafe) static var instance: (any BADownloaderExtension)?
    /// The entry and the table the runner keeps pointers to: allocated once and kept for the life of the process
    /// (a pointer out of `withUnsafePointer(to:)` may not outlive the call, even to a static).
    nonisolated(unsafe) static let entry = UnsafeMutablePointer<ba_entry_t>.allocate(capacity: 1)
    nonisolated(unsafe) static let table = UnsafeMutablePointer<ba_extension_t>.allocate(capacity: 1)
    nonisolated(unsafe) static var identifier: UnsafeMutablePointer<CChar>?

    static func prepare(_ type: any BADownloaderExtension.Type) -> UnsafeRawPointer {
        if extensionType == nil {
            extensionType = type
            identifier = strdup(String(reflecting: type))
            entry.initialize(to: ba_entry_t(
                struct_size: UInt32(MemoryLayout<ba_entry_t>.size),
                abi_version: ba_version_t(major: BA_ABI_VERSION_MAJOR, minor: BA_ABI_VERSION_MINOR),
                identifier: UnsafePointer(identifier), init: { host in ExtensionBridge.start(host) }))
        }
        return UnsafeRawPointer(entry)
    }

    static func start(_ host: UnsafePointer<ba_host_t>?) -> UnsafePointer<ba_extension_t>? {
        guard let host, let extensionType else { return nil }
        BADownloadManager.shared.transport = ExtensionChannel(host: host)
        instance = extensionType.init()
        table.initialize(to: ba_extension_t(
            struct_size: UInt32(MemoryLayout<ba_extension_t>.size), extension_data: nil,
            downloads_for_request: { _, request, manifestPath, info, sink in
                ExtensionBridge.downloads(request, manifestPath, info, sink)
            },
            download_failed: { _, download, error in ExtensionBridge.failed(download, error) },
            download_finished: { _, download, path in ExtensionBridge.finished(download, path) },
            did_receive_challenge: { _, download, challenge, reply in
                ExtensionBridge.challenge(download, challenge, reply)
            },
            will_terminate: { _ in ExtensionBridge.willTerminate() },
            should_download_asset_pack: { _, pack in ExtensionBridge.shouldDownload(pack) }))
        return UnsafePointer(table)
    }

    /// A managed extension's veto; any other extension takes Apple's default, which downloads every pack.
    static func shouldDownload(_ pack: UnsafePointer<ba_asset_pack_t>?) -> Bool {
        guard let managed = instance as? any ManagedDownloaderExtension, let pack, let id = pack.pointee.id else {
            return true
        }
        let userInfo = pack.pointee.user_info_json.map { Data(String(cString: $0).utf8) }
        return managed.shouldDownload(AssetPack(
            id: String(cString: id), version: Int(pack.pointee.version), downloadSize: Int(pack.pointee.download_size),
            userInfo: userInfo))
    }

    static func downloads(
        _ rawRequest: Int32, _ manifestPath: UnsafePointer<CChar>?, _ rawInfo: UnsafePointer<ba_app_extension_info_t>?,
        _ sink: UnsafePointer<ba_download_sink_t>?
    ) {
        guard let instance, let sink, let manifestPath, let request = BAContentRequest(rawValue: Int(rawRequest))
        else { return }
        let info = rawInfo.map { info in
            BAAppExtensionInfo(
                restrictedDownloadSizeRemaining: Self.optionalSize(info.pointee.restricted_download_size_remaining),
                restrictedEssentialDownloadSizeRemaining: Self.optionalSize(
                    info.pointee.restricted_essential_download_size_remaining))
        } ?? BAAppExtensionInfo(restrictedDownloadSizeRemaining: nil, restrictedEssentialDownloadSizeRemaining: nil)
        let manager = BADownloadManager.shared
        manager.answeringContentRequest.withLock { $0 = true }
        let downloads = instance.downloads(
            for: request, manifestURL: URL(fileURLWithPath: String(cString: manifestPath)), extensionInfo: info)
        manager.answeringContentRequest.withLock { $0 = false }
        for download in downloads {
            _ = ABIDownload.with(download) { sink.pointee.add(sink, $0) }
        }
    }

    static func failed(_ download: UnsafePointer<ba_download_t>?, _ error: UnsafePointer<ba_error_t>?) {
        guard let instance, let download, let error else { return }
        let nsError = NSError(abi: error.pointee)
        instance.backgroundDownload(ABIDownload.object(download.pointee), failedWithError: nsError)
    }

    static func finished(_ download: UnsafePointer<ba_download_t>?, _ path: UnsafePointer<CChar>?) {
        guard let instance, let download, let path else { return }
        instance.backgroundDownload(
            ABIDownload.object(download.pointee), finishedWithFileURL: URL(fileURLWithPath: String(cString: path)))
    }

    /// Runs the async method on a task and answers when it returns; the arguments are copied first, as they are
    /// borrowed for the call only (the reply stays valid until answered).
    static func challenge(
        _ download: UnsafePointer<ba_download_t>?, _ challenge: UnsafePointer<ba_auth_challenge_t>?,
        _ reply: UnsafePointer<ba_challenge_reply_t>?
    ) {
        guard let reply else { return }
        let answer = UnsafeReply(reply)
        guard let instance, let download, let challenge, let host = challenge.pointee.host else {
            return answer.complete(.performDefaultHandling, nil)
        }
        let question = AuthenticationChallenge(
            host: String(cString: host), port: Int(challenge.pointee.port),
            scheme: challenge.pointee.protocol.map { String(cString: $0) } ?? "https",
            realm: challenge.pointee.realm.map { String(cString: $0) },
            authenticationMethod: challenge.pointee.authentication_method.map { String(cString: $0) }
                ?? NSURLAuthenticationMethodHTTPBasic,
            previousFailureCount: Int(challenge.pointee.previous_failure_count))
        let object = ABIDownload.object(download.pointee)
        let handler = UnsafeExtension(instance)
        Task {
            let (disposition, credential) = await handler.instance.backgroundDownload(object, didReceive: question.object)
            answer.complete(disposition, credential)
        }
    }

    static func willTerminate() {
        instance?.extensionWillTerminate()
    }

    static func optionalSize(_ size: Int64) -> Int? { size < 0 ? nil : Int(size) }
}

/// The runner's reply to one challenge: valid until `complete` is called, from any thread.
private struct UnsafeReply: @unchecked Sendable {
    let reply: UnsafePointer<ba_challenge_reply_t>

    init(_ reply: UnsafePointer<ba_challenge_reply_t>) { self.reply = reply }

    func complete(_ disposition: URLSession.AuthChallengeDisposition, _ credential: URLCredential?) {
        let user = credential?.user ?? "", password = credential?.password ?? ""
        user.withCString { user in
            password.withCString { password in
                reply.pointee.complete(reply, Int32(disposition.rawValue), user, password)
            }
        }
    }
}

/// The window's extension instance, handed to the task that runs its async method (entry points run one at a time,
/// and the instance lives as long as the process).
private struct UnsafeExtension: @unchecked Sendable {
    let instance: any BADownloaderExtension

    init(_ instance: any BADownloaderExtension) { self.instance = instance }
}
