// The durable floor for many small files, in Swift on the libraries bahost uses: the same unavoidable work as
// durable_floor.c (fetch, write as it arrives, fsync, rename, one row a file in an SQLite queue in WAL with
// synchronous=NORMAL, a transaction a file), done with AsyncHTTPClient and NIO (each body written by the event loop
// that reads it, as bahost's BodyWriter does), GRDB, and a pool of PARALLEL threads for the syncs. No queue turns, no
// extension, no policy: what separates this program from durable_floor.c is the libraries' cost, and what separates
// bahost from this program is bahost's own (docs/PERFORMANCE.md).
//
//   bahost-library-floor URLS OUTDIR DATABASE [PARALLEL]     URLS: one URL a line; files are OUTDIR/1.bin, ...
//
// Prints nothing on success; exits 1 with a message on the first failure.
import AsyncHTTPClient
import Foundation
import GRDB
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Writes one response's body into its file on the event loop; fails the request on a status other than 200.
final class FileWriter: HTTPClientResponseDelegate, Sendable {
    typealias Response = Void
    struct Refused: Error { let status: UInt }
    let fd: Int32

    init(fd: Int32) { self.fd = fd }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        head.status == .ok
            ? task.eventLoop.makeSucceededVoidFuture()
            : task.eventLoop.makeFailedFuture(Refused(status: head.status.code))
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let written = buffer.withUnsafeReadableBytes { bytes -> Bool in
            var offset = 0
            while offset < bytes.count {
                let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
        return written
            ? task.eventLoop.makeSucceededVoidFuture()
            : task.eventLoop.makeFailedFuture(IOError(errnoCode: errno, reason: "write"))
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {}
}

func fail(_ what: String) -> Never {
    FileHandle.standardError.write(Data("bahost-library-floor: \(what)\n".utf8))
    exit(1)
}

/// One run: every URL fetched, synced, renamed and recorded, `parallel` on the network at a time.
final class Floor: Sendable {
    let urls: [String]
    let outdir: String
    let parallel: Int
    let queue: DatabasePool
    let client: HTTPClient
    let syncers: NIOThreadPool
    /// The next URL to start, and how many files are done.
    let progress = Mutex((next: 0, done: 0))
    let finished = DispatchSemaphore(value: 0)

    init(urls: [String], outdir: String, database: String, parallel: Int) throws {
        self.urls = urls
        self.outdir = outdir
        self.parallel = parallel
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        queue = try DatabasePool(path: database, configuration: configuration)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS finished (id INTEGER PRIMARY KEY, path TEXT NOT NULL)")
        }
        var http = HTTPClient.Configuration(redirectConfiguration: .disallow, decompression: .disabled)
        http.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = parallel
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
        syncers = NIOThreadPool(numberOfThreads: parallel)
        syncers.start()
    }

    func run() {
        guard !urls.isEmpty else { return }
        for _ in 0..<min(parallel, urls.count) { startNext() }
        finished.wait()
        try? client.syncShutdown()
        try? syncers.syncShutdownGracefully()
    }

    private func path(_ index: Int, _ suffix: String = "") -> String { "\(outdir)/\(index + 1).bin\(suffix)" }

    /// Starts the next URL, if any is left.
    private func startNext() {
        let index = progress.withLock { state -> Int? in
            guard state.next < urls.count else { return nil }
            defer { state.next += 1 }
            return state.next
        }
        guard let index else { return }
        let partial = path(index, ".partial")
        let fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { fail("\(partial): \(String(cString: strerror(errno)))") }
        let request: HTTPClient.Request
        do { request = try HTTPClient.Request(url: urls[index]) } catch { fail("\(urls[index]): \(error)") }
        client.execute(request: request, delegate: FileWriter(fd: fd)).futureResult.whenComplete { result in
            if case .failure(let error) = result { fail("\(self.urls[index]): \(error)") }
            // The sync waits for the disk: off the event loop, on a thread of its own, as bahost's transfers do; the
            // connection takes the next URL meanwhile, as curl's does in durable_floor.c.
            defer { self.startNext() }
            self.syncers.submit { _ in self.finish(index, fd: fd, partial: partial) }
        }
    }

    private func finish(_ index: Int, fd: Int32, partial: String) {
        guard fsync(fd) == 0 else { fail("fsync: \(String(cString: strerror(errno)))") }
        close(fd)
        let final = path(index)
        guard rename(partial, final) == 0 else { fail("rename: \(String(cString: strerror(errno)))") }
        do {
            try queue.write { db in
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO finished (id, path) VALUES (?, ?)")
                    .execute(arguments: [index, final])
            }
        } catch {
            fail("the queue: \(error)")
        }
        let all = progress.withLock { state -> Bool in
            state.done += 1
            return state.done == urls.count
        }
        if all { finished.signal() }
    }
}

@main
enum LibraryFloor {
    static func main() {
        let arguments = CommandLine.arguments
        let usage = "usage: bahost-library-floor URLS OUTDIR DATABASE [PARALLEL]\n"
        if arguments.count == 2 && ["-h", "--help"].contains(arguments[1]) {
            print(usage, terminator: "")
            exit(0)
        }
        guard arguments.count >= 4 else {
            FileHandle.standardError.write(Data(usage.utf8))
            exit(2)
        }
        guard let list = try? String(contentsOfFile: arguments[1], encoding: .utf8) else {
            fail("cannot read \(arguments[1])")
        }
        let parallel = min(64, max(1, arguments.count > 4 ? Int(arguments[4]) ?? 16 : 16))
        do {
            let floor = try Floor(
                urls: list.split(whereSeparator: \.isNewline).map(String.init), outdir: arguments[2],
                database: arguments[3], parallel: parallel)
            floor.run()
        } catch {
            fail("the queue: \(error)")
        }
    }
}
