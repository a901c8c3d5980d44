import CBAExtension
import Glibc
import Vocabulary

/// Fills a caller's `ba_error_t`, never past the room its `struct_size` gives (0 is read as the 1.0 size).
enum ErrorOut {
    static func fill(_ out: UnsafeMutablePointer<ba_error_t>?, _ error: any Error) {
        let error = hostError(error)
        fill(out, domain: error.domain, code: error.code, message: error.message)
    }

    /// `error` as the library reports every error: what `AppClient` throws already is one; a misuse is in bahost's
    /// domain.
    static func hostError(_ error: any Error) -> HostError {
        switch error {
        case let error as HostError: error
        case let misuse as Misuse: HostError.bahost(misuse.message, code: Int64(misuse.code))
        default: HostError.bahost("\(error)")
        }
    }

    static func fill(_ out: UnsafeMutablePointer<ba_error_t>?, domain: String, code: Int64, message: String) {
        guard let out else { return }
        let full = MemoryLayout<ba_error_t>.size
        let room = out.pointee.struct_size == 0 ? full : min(Int(out.pointee.struct_size), full)
        var value = make(domain: domain, code: code, message: message)
        value.struct_size = UInt32(room)
        let bytes = UnsafeMutableRawPointer(out)
        withUnsafeBytes(of: &value) { bytes.copyMemory(from: $0.baseAddress!, byteCount: room) }
        // A string the room cuts still ends inside it (the ABI's rule: strings are truncated to fit).
        let fields = [
            (MemoryLayout<ba_error_t>.offset(of: \.domain)!, MemoryLayout.size(ofValue: value.domain)),
            (MemoryLayout<ba_error_t>.offset(of: \.message)!, MemoryLayout.size(ofValue: value.message)),
        ]
        for (start, size) in fields where start < room {
            let written = UnsafeMutableRawBufferPointer(start: bytes + start, count: min(room, start + size) - start)
            if !written.contains(0) { written[written.count - 1] = 0 }
        }
    }

    /// A whole `ba_error_t`, strings cut on a UTF-8 boundary to fit.
    static func make(domain: String, code: Int64, message: String) -> ba_error_t {
        var value = ba_error_t()
        value.struct_size = UInt32(MemoryLayout<ba_error_t>.size)
        value.code = code
        copy(domain, into: &value.domain)
        copy(message, into: &value.message)
        return value
    }

    static func make(_ error: any Error) -> ba_error_t {
        let error = hostError(error)
        return make(domain: error.domain, code: error.code, message: error.message)
    }

    private static func copy<Field>(_ text: String, into field: inout Field) {
        withUnsafeMutableBytes(of: &field) { raw in
            var bytes = Array(text.utf8.prefix(raw.count - 1))
            // Never end inside a character: drop continuation bytes, then the lead byte they belonged to.
            if bytes.count == raw.count - 1 {
                while let last = bytes.last, last & 0xC0 == 0x80 { bytes.removeLast() }
                if let last = bytes.last, last & 0x80 != 0 { bytes.removeLast() }
            }
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
    }

    /// Misuse of the API (a NULL where something is needed, a buffer too small), thrown: bahost's domain, an
    /// errno-style code.
    struct Misuse: Error {
        let code: Int32
        let message: String
    }

    /// Copies `text` and its NUL into the caller's buffer, or throws ERANGE saying how much room it needs (which
    /// `length` gets either way).
    static func copy(_ text: String, into buffer: UnsafeMutablePointer<CChar>?, size: Int, length: UnsafeMutablePointer<Int>?)
        throws
    {
        let bytes = Array(text.utf8) + [0]
        length?.pointee = bytes.count
        guard let buffer, size >= bytes.count else {
            throw Misuse(code: ERANGE, message: "the text needs \(bytes.count) bytes; the buffer has \(size)")
        }
        bytes.withUnsafeBytes { UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
    }

    /// Misuse of the API (a wrong struct size, an unknown handle): bahost's domain, an errno-style code.
    static func misuse(_ out: UnsafeMutablePointer<ba_error_t>?, _ code: Int32, _ message: String) -> Bool {
        fill(out, domain: HostError.bahostDomain, code: Int64(code), message: message)
        return false
    }

    static func invalidConnection(_ out: UnsafeMutablePointer<ba_error_t>?, _ message: String) -> Bool {
        fill(out, domain: BA_ERROR_DOMAIN, code: Int64(BA_ERROR_CALLER_CONNECTION_INVALID.rawValue), message: message)
        return false
    }
}
