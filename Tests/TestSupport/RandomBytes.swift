import Foundation

extension Data {
    /// `count` random bytes (the tests' payloads: incompressible, and never equal by chance), read from the kernel's
    /// random source in large reads. A byte at a time (`UInt8.random`, a system call each), a large payload took
    /// most of its test's time.
    public static func random(count: Int) -> Data {
        guard count > 0 else { return Data() }
        guard let source = FileHandle(forReadingAtPath: "/dev/urandom") else { fatalError("cannot open /dev/urandom") }
        defer { try? source.close() }
        let data = source.readData(ofLength: count)
        precondition(data.count == count, "/dev/urandom gave \(data.count) of \(count) bytes")
        return data
    }
}
