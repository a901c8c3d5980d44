import CBAExtension

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
            // Authentication challenges reach extensions once the host performs transfers itself.
            did_receive_challenge: nil,
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

    static func willTerminate() {
        instance?.extensionWillTerminate()
    }

    static func optionalSize(_ size: Int64) -> Int? { size < 0 ? nil : Int(size) }
}
