import Glibc

/// One frame's bytes, owned: memory of its own, freed with the last copy of the value. What the compact writer made
/// becomes a frame without a copy, and a reply of downloads is read in place (`DownloadsReply`). Not Foundation's
/// `Data`: the app library links this module, and must not carry Foundation.
public struct Frame: RandomAccessCollection, Sendable {
    private final class Storage: @unchecked Sendable {  // safe: written once, before it is shared
        let base: UnsafeMutableRawPointer?
        let count: Int

        init(base: UnsafeMutableRawPointer?, count: Int) {
            self.base = base
            self.count = count
        }

        deinit { free(base) }
    }

    private let storage: Storage

    /// A copy of `bytes`.
    public init(_ bytes: some Collection<UInt8>) {
        let count = bytes.count
        let base = count == 0 ? nil : malloc(count)
        if let base {
            let buffer = UnsafeMutableRawBufferPointer(start: base, count: count)
            _ = buffer.initializeMemory(as: UInt8.self, fromContentsOf: bytes)
        }
        storage = Storage(base: base, count: count)
    }

    /// `count` bytes at `base`, from `malloc`, which the frame now owns and frees.
    init(adopting base: UnsafeMutableRawPointer, count: Int) {
        storage = Storage(base: base, count: count)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { storage.count }

    public subscript(position: Int) -> UInt8 {
        precondition(position >= 0 && position < storage.count, "a frame's index out of range")
        return storage.base!.load(fromByteOffset: position, as: UInt8.self)
    }

    /// Calls `body` with the frame's bytes, valid during the call.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(storage) { try body(UnsafeRawBufferPointer(start: storage.base, count: storage.count)) }
    }

    public func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        try withUnsafeBytes { try body($0.assumingMemoryBound(to: UInt8.self)) }
    }
}

extension Frame: Equatable {
    /// Frames are equal when their bytes are.
    public static func == (a: Frame, b: Frame) -> Bool {
        a.withUnsafeBytes { a in b.withUnsafeBytes { b in a.elementsEqual(b) } }
    }
}

extension Collection<UInt8> {
    /// Calls `body` with the bytes contiguous: in place when they are (a frame, an array, Foundation's `Data`), else
    /// copied.
    func withContiguousBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let result = try withContiguousStorageIfAvailable(body) { return result }
        return try Array(self).withUnsafeBufferPointer(body)
    }
}
