import CBAApp
import CBAExtension
import Glibc
import ServiceWire

/// `ba_download_list_t`: downloads copied into one `malloc` block (ba/app.h), laid out as the list itself, the
/// downloads, their header arrays, then every string back to back in the order the header promises.
enum DownloadList {
    private static let listSize = MemoryLayout<ba_download_list_t>.stride
    private static let downloadSize = MemoryLayout<ba_download_t>.stride
    private static let pointerSize = MemoryLayout<UnsafePointer<CChar>?>.stride

    /// The block, or nil when it cannot be allocated. Freed with `free` (`ba_app_free`). Read straight from the
    /// service's reply, in two passes over it (sizes, then the copy); throws what the reply's check found.
    static func make(_ reply: DownloadsReply) throws -> UnsafeMutablePointer<ba_download_list_t>? {
        var headerCount = 0, stringBytes = 0
        try reply.forEach { download in
            headerCount += download.httpHeaders.count
            stringBytes += length(download.identifier) + length(download.uniqueIdentifier) + length(download.url)
                + length(download.applicationGroupIdentifier) + length(download.sha256)
            for var header in download.httpHeaders { stringBytes += header.withUTF8 { length($0) } }
        }
        let count = reply.count
        let headersAt = listSize + count * downloadSize
        let stringsAt = headersAt + headerCount * pointerSize
        guard let block = malloc(stringsAt + stringBytes) else { return nil }
        let list = block.bindMemory(to: ba_download_list_t.self, capacity: 1)
        let values = (block + listSize).bindMemory(to: ba_download_t.self, capacity: count)
        var headerSlot = (block + headersAt).bindMemory(to: UnsafePointer<CChar>?.self, capacity: headerCount)
        var cursor = (block + stringsAt).assumingMemoryBound(to: CChar.self)

        /// Copies `text` (up to a NUL inside it, as C reads it) and its NUL; nil for nil, after writing "".
        func put(_ text: UnsafeBufferPointer<UInt8>?) -> UnsafePointer<CChar>? {
            let start = cursor
            if let text {
                let count = prefixLength(text)
                if count > 0 { UnsafeMutableRawPointer(cursor).copyMemory(from: text.baseAddress!, byteCount: count) }
                cursor += count
            }
            cursor.pointee = 0
            cursor += 1
            return text == nil ? nil : UnsafePointer(start)
        }

        var index = 0
        do {
            try reply.forEach { download in
                let identifier = put(download.identifier), unique = put(download.uniqueIdentifier)
                let url = put(download.url), group = put(download.applicationGroupIdentifier)
                let sha256 = put(download.sha256)
                let headers = download.httpHeaders.count == 0 ? nil : UnsafePointer(headerSlot)
                for var header in download.httpHeaders {
                    headerSlot.pointee = header.withUTF8 { put($0) }
                    headerSlot += 1
                }
                (values + index).initialize(
                    to: ba_download_t(
                        struct_size: UInt32(downloadSize), kind: download.kind.rawValue, identifier: identifier,
                        unique_identifier: unique, url: url, application_group_identifier: group,
                        file_size: download.fileSize, priority: download.priority, state: download.state,
                        essential: download.isEssential, sha256: sha256, http_headers: headers,
                        http_header_count: UInt32(download.httpHeaders.count),
                        network_access: UInt64(download.networkAccess.rawValue)))
                index += 1
            }
        } catch {
            // The first pass checked every byte this one reads; should it throw all the same, the block is not leaked.
            free(block)
            throw error
        }
        let strings = (block + stringsAt).assumingMemoryBound(to: CChar.self)
        list.initialize(
            to: ba_download_list_t(
                struct_size: UInt32(listSize), download_size: UInt32(downloadSize), count: count,
                downloads: UnsafePointer(values), strings: UnsafePointer(strings), strings_size: stringBytes))
        return list
    }

    /// Bytes `text` takes in the strings, its NUL included (1 for nil: an empty string).
    private static func length(_ text: UnsafeBufferPointer<UInt8>?) -> Int {
        guard let text else { return 1 }
        return prefixLength(text) + 1
    }

    /// The bytes before the first NUL: what C sees of a string, so that splitting the strings at NULs stays aligned.
    private static func prefixLength(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        guard let base = bytes.baseAddress, let nul = memchr(base, 0, bytes.count) else { return bytes.count }
        return UnsafeRawPointer(nul) - UnsafeRawPointer(base)
    }
}
