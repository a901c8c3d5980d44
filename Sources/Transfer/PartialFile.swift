import CHostSupport
import Crypto
import Foundation

/// The file a transfer writes, opened for appending. Errors come back as permanent transfer errors; a full disk
/// says so.
struct PartialFile: Sendable {
    let path: String
    private var descriptor: Int32
    private(set) var length: Int64
    /// Where the bytes handed to the disk so far end.
    private var writtenBack: Int64
    /// The SHA-256 of the file's bytes so far, updated as they are appended, once `startHashing` was called: the
    /// finished file is then verified without reading it again.
    private var hasher: SHA256?
    /// The free space the volume must keep while bytes are appended (the person's storage floor), 0 for none, and
    /// whether falling below it makes the download wait (a discretionary one) rather than fail.
    var floor: (bytes: Int64, waits: Bool) = (0, false)
    /// Where the free space was last looked at: every `floorCheckStep` bytes appended.
    private var floorCheckedAt: Int64 = 0
    static let floorCheckStep: Int64 = 8 << 20

    init(path: String) throws(TransferError) {
        self.path = path
        descriptor = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Self.failure("cannot open \(path)") }
        var info = stat()
        fstat(descriptor, &info)
        length = Int64(info.st_size)
        writtenBack = length
    }

    mutating func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    mutating func truncate() -> TransferError? {
        guard ftruncate(descriptor, 0) == 0 else { return Self.failure("cannot truncate \(path)") }
        length = 0
        writtenBack = 0
        if hasher != nil { hasher = SHA256() }
        return nil
    }

    /// Hashes the bytes appended from now on, as they are written; the bytes already there (a resume) are read
    /// once, now.
    mutating func startHashing() -> TransferError? {
        var hasher = SHA256()
        if length > 0, let error = readAll(into: &hasher) { return error }
        self.hasher = hasher
        return nil
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) -> TransferError? {
        var written = 0
        while written < bytes.count {
            let n = write(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if n < 0 {
                if errno == EINTR { continue }
                return Self.failure("cannot write \(path)")
            }
            written += n
        }
        length += Int64(bytes.count)
        hasher?.update(bufferPointer: bytes)
        bahost_write_behind(descriptor, &writtenBack, length, false)
        if floor.bytes > 0 && length - floorCheckedAt >= Self.floorCheckStep {
            floorCheckedAt = length
            if let free = availableBytes(), free < floor.bytes {
                let message = "the volume of \(path) is down to \(free) bytes free, below the storage floor of "
                    + "\(floor.bytes) bytes (bahost settings: storage.floor-percent, storage.floor-size)"
                return floor.waits ? .waitForSpace(message) : .permanent(TransferError.insufficientSpace, message)
            }
        }
        return nil
    }

    /// Bytes free for an unprivileged writer on the filesystem that holds the file; nil when the kernel will not say.
    func availableBytes() -> Int64? {
        var stats = statvfs()
        guard fstatvfs(descriptor, &stats) == 0 else { return nil }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }

    /// Bytes free for an unprivileged writer, and the size, of the filesystem that holds the file, in one call; nil
    /// when the kernel will not say.
    func volumeSpace() -> (available: Int64, size: Int64)? {
        var stats = statvfs()
        guard fstatvfs(descriptor, &stats) == 0 else { return nil }
        return (Int64(stats.f_bavail) * Int64(stats.f_frsize), Int64(stats.f_blocks) * Int64(stats.f_frsize))
    }

    /// Makes what was written durable before the queue records it.
    func sync() -> TransferError? {
        fsync(descriptor) == 0 ? nil : Self.failure("cannot sync \(path)")
    }

    /// The SHA-256 of the whole file, in lowercase hex: the running hash when the file was hashed as it was
    /// written, else read from the disk.
    func sha256() -> Result<String, TransferError> {
        var hasher = hasher ?? SHA256()
        if self.hasher == nil, let error = readAll(into: &hasher) { return .failure(error) }
        return .success(hasher.finalize().lowercaseHex)
    }

    private func readAll(into hasher: inout SHA256) -> TransferError? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return Self.failure("cannot read \(path)") }
        defer { try? handle.close() }
        while true {
            let chunk: Data
            do {
                chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            } catch {
                return Self.failure("cannot read \(path)")
            }
            if chunk.isEmpty { return nil }
            hasher.update(data: chunk)
        }
    }

    private static func failure(_ what: String) -> TransferError {
        let code = errno
        if code == ENOSPC || code == EDQUOT {
            return .permanent(TransferError.insufficientSpace, "\(what): the disk is full")
        }
        return .permanent(Int64(code), "\(what): \(String(cString: strerror(code)))")
    }
}
