import AppClient
import CBAApp
import CBAExtension
import Glibc
import ServiceWire
import Vocabulary

// ba/app.h: Apple's BADownloadManager calls.

/// The 1.0 size of `ba_download_t` (pinned in SDK/C/abi_layout.c).
private let downloadSize10 = 88

/// A caller's download as it described it (`unique_identifier` NULL stays nil: the service then matches the app's
/// active download by `identifier`), or nil after filling `error` (Apple's code 0) for a malformed one.
private func described(_ download: UnsafePointer<ba_download_t>?, _ error: UnsafeMutablePointer<ba_error_t>?) -> Download? {
    func invalid(_ message: String) -> Download? {
        ErrorOut.fill(error, domain: BA_ERROR_DOMAIN, code: Int64(BA_ERROR_DOWNLOAD_INVALID.rawValue), message: message)
        return nil
    }
    guard let download else { return invalid("the download is NULL") }
    // The size first, read alone: a 1.1 app's struct is 88 bytes, and only what it has is copied, into a zeroed value
    // of this version's size (reading `pointee` whole would read past the caller's struct).
    let size = Int(UnsafeRawPointer(download).load(as: UInt32.self))
    guard size >= downloadSize10 else {
        return invalid(
            "ba_download_t.struct_size is \(size); this library needs \(downloadSize10) (set it to sizeof(ba_download_t))")
    }
    var copy = ba_download_t()
    memcpy(&copy, download, min(size, MemoryLayout<ba_download_t>.size))
    guard copy.identifier != nil else { return invalid("the download has no identifier") }
    guard copy.kind != Int32(BA_DOWNLOAD_KIND_URL.rawValue) || copy.url != nil else {
        return invalid("the download has no URL")
    }
    guard copy.http_header_count == 0 || copy.http_headers != nil else {
        return invalid("the download has \(copy.http_header_count) headers and no array of them")
    }
    return Download(copy)
}

@_cdecl("ba_app_schedule_download")
public func ba_app_schedule_download(
    _ app: OpaquePointer?, _ download: UnsafePointer<ba_download_t>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    guard let download = described(download, error) else { return false }
    return withConnection(app, error) { try $0.client.expectOK(.schedule(download)) }
}

@_cdecl("ba_app_start_foreground_download")
public func ba_app_start_foreground_download(
    _ app: OpaquePointer?, _ download: UnsafePointer<ba_download_t>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    guard let download = described(download, error) else { return false }
    return withConnection(app, error) { try $0.client.expectOK(.startForeground(download)) }
}

@_cdecl("ba_app_cancel_download")
public func ba_app_cancel_download(
    _ app: OpaquePointer?, _ download: UnsafePointer<ba_download_t>?, _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    guard let download = described(download, error) else { return false }
    return withConnection(app, error) { try $0.client.expectOK(.cancel(download)) }
}

@_cdecl("ba_app_fetch_current_downloads")
public func ba_app_fetch_current_downloads(
    _ app: OpaquePointer?, _ visit: ba_download_visitor_t?, _ context: UnsafeMutableRawPointer?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    guard let visit else { return ErrorOut.misuse(error, EINVAL, "ba_app_fetch_current_downloads: visit is NULL") }
    // The copy below, visited: one block of C memory is cheaper than a Swift value of each download.
    var list: UnsafeMutablePointer<ba_download_list_t>?
    guard ba_app_copy_current_downloads(app, &list, error), let list else { return false }
    defer { free(list) }
    for index in 0..<list.pointee.count { visit(context, list.pointee.downloads! + index) }
    return true
}

@_cdecl("ba_app_copy_current_downloads")
public func ba_app_copy_current_downloads(
    _ app: OpaquePointer?, _ list: UnsafeMutablePointer<UnsafeMutablePointer<ba_download_list_t>?>?,
    _ error: UnsafeMutablePointer<ba_error_t>?
) -> Bool {
    guard let list else { return ErrorOut.misuse(error, EINVAL, "ba_app_copy_current_downloads: list is NULL") }
    list.pointee = nil
    var copy: UnsafeMutablePointer<ba_download_list_t>?
    var count = 0
    guard
        withConnection(app, error, { connection in
            let reply = try connection.client.currentDownloadsReply()
            count = reply.count
            do {
                copy = try DownloadList.make(reply)
            } catch {
                throw AppClient.invalid("the service's reply to fetchCurrentDownloads: \(error)")
            }
        })
    else { return false }
    guard let copy else {
        return ErrorOut.misuse(error, ENOMEM, "ba_app_copy_current_downloads: no memory for \(count) downloads")
    }
    list.pointee = copy
    return true
}

@_cdecl("ba_app_free")
public func ba_app_free(_ data: UnsafeMutableRawPointer?) { free(data) }
