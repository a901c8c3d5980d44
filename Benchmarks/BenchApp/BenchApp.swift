import ArgumentParser
import BackgroundAssets
import Foundation
import Synchronization

/// The app side of the benchmarks: an app written against `BADownloadManager`, as `Benchmarks/run.sh` runs it under
/// `bahost daemon`. Prints one line per measurement: `NAME MILLISECONDS`.
@main
struct BenchApp: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bahost-bench-app",
        abstract: "Measures the service from an app: queue scale and completion → delegate latency.",
        subcommands: [Queue.self, DelegateLatency.self])
}

/// The app group the benchmark's Info.plist declares.
let appGroup = "group.com.example.levels"

func milliseconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15
}

func download(_ identifier: String, _ url: String, size: Int) -> BAURLDownload {
    BAURLDownload(
        identifier: identifier, request: URLRequest(url: URL(string: url)!), fileSize: size,
        applicationGroupIdentifier: appGroup)
}

extension BenchApp {
    /// Schedules COUNT downloads one `scheduleDownload` at a time (each durable in the queue when it returns), then
    /// times `fetchCurrentDownloads` on that queue.
    struct Queue: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Schedule COUNT downloads, then time fetchCurrentDownloads on that queue.")

        @Option(help: "Downloads to schedule.") var count = 10_000
        @Option(help: "Their URL; each gets ?N appended.") var url: String
        @Option(help: "Times to call fetchCurrentDownloads.") var fetches = 20

        func run() throws {
            let manager = BADownloadManager.shared
            let tag = UUID().uuidString.prefix(8)
            let start = ContinuousClock.now
            for i in 0..<count {
                try manager.scheduleDownload(download("q-\(tag)-\(i)", "\(url)?\(i)", size: 65536))
            }
            print("schedule", milliseconds(since: start))
            for _ in 0..<fetches {
                let start = ContinuousClock.now
                let current = try manager.fetchCurrentDownloads()
                let elapsed = milliseconds(since: start)
                guard current.count >= count else {
                    throw ValidationError("fetchCurrentDownloads returned \(current.count) downloads, not \(count)")
                }
                print("fetch", elapsed)
            }
        }
    }

    /// Schedules one download at a time and measures how long after the host put the finished file in the app
    /// group's container the delegate was called with it. The moment the file lands is taken from the kernel
    /// (inotify, `IN_MOVED_TO` on the folder finished files are renamed into), so that nothing in bahost has to
    /// report it.
    struct DelegateLatency: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delegate-latency",
            abstract: "Time from a finished file landing in the container to the delegate being called with it.")

        @Option(help: "Downloads, one after another.") var count = 200
        @Option(help: "The URL of a small file; each download gets ?N appended.") var url: String
        @Option(help: "Its size in bytes.") var size: Int

        func run() throws {
            guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: appGroup)
            else { throw ValidationError("no container for \(appGroup)") }
            let landing = container.appendingPathComponent("Library/Caches/BackgroundAssets")
            try FileManager.default.createDirectory(at: landing, withIntermediateDirectories: true)
            let watcher = try LandingWatcher(folder: landing.path)
            let delegate = TimingDelegate()
            let manager = BADownloadManager.shared
            manager.delegate = delegate
            let tag = UUID().uuidString.prefix(8)
            for i in 0..<count {
                let scheduled = download("d-\(tag)-\(i)", "\(url)?\(i)", size: size)
                try manager.scheduleDownload(scheduled)
                guard let (name, calledAt) = delegate.next(timeout: 30) else {
                    throw ValidationError("download \(i) did not reach the delegate within 30 s")
                }
                guard let landedAt = watcher.landed(name, timeout: 5) else {
                    throw ValidationError("\(name) reached the delegate but was never seen landing")
                }
                print("delegate", Double(calledAt - landedAt) / 1e6)
            }
            withExtendedLifetime(delegate) {}
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for the watcher's thread and the delegate's queue.
func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

/// Hands each finished file's name to the benchmark, with the moment the delegate got it.
final class TimingDelegate: NSObject, BADownloadManagerDelegate, @unchecked Sendable {
    private let condition = NSCondition()
    private var calls: [(String, Int64)] = []

    func download(_ download: BADownload, finishedWithFileURL fileURL: URL) {
        let now = monotonicNanoseconds()
        condition.lock()
        calls.append((fileURL.lastPathComponent, now))
        condition.signal()
        condition.unlock()
    }

    func download(_ download: BADownload, failedWithError error: any Error) {
        FileHandle.standardError.write(Data("\(download.identifier) failed: \(error)\n".utf8))
    }

    func next(timeout: Double) -> (String, Int64)? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while calls.isEmpty {
            guard condition.wait(until: deadline) else { return nil }
        }
        return calls.removeFirst()
    }
}

/// Watches a folder with inotify on a thread of its own and notes when each file was moved into it.
final class LandingWatcher: @unchecked Sendable {
    private let descriptor: Int32
    private let condition = NSCondition()
    private var landed: [String: Int64] = [:]

    init(folder: String) throws {
        descriptor = inotify_init1(Int32(IN_CLOEXEC))
        guard descriptor >= 0, inotify_add_watch(descriptor, folder, UInt32(IN_MOVED_TO)) >= 0 else {
            throw ValidationError("cannot watch \(folder): \(String(cString: strerror(errno)))")
        }
        Thread.detachNewThread { self.read() }
    }

    private func read() {
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        while true {
            let count = Glibc.read(descriptor, buffer, capacity)
            let now = monotonicNanoseconds()
            guard count > 0 else { return }
            var offset = 0
            condition.lock()
            while offset + MemoryLayout<inotify_event>.size <= count {
                let length = Int(buffer.load(fromByteOffset: offset + 12, as: UInt32.self))
                let start = offset + MemoryLayout<inotify_event>.size
                let nameBytes = UnsafeRawBufferPointer(start: buffer + start, count: length)
                let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
                landed[name] = now
                offset = start + length
            }
            condition.broadcast()
            condition.unlock()
        }
    }

    func landed(_ name: String, timeout: Double) -> Int64? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while landed[name] == nil {
            guard condition.wait(until: deadline) else { return nil }
        }
        return landed.removeValue(forKey: name)
    }
}
