// The durable floor for many small files, in Swift on the libraries bahost uses: the same unavoidable work as
// durable_floor.c (fetch, write as it arrives, fsync, rename, one row a file in an SQLite queue in WAL with
// synchronous=NORMAL, a transaction a file), done with libcurl's multi interface on one thread through bahost's
// CCurl shim (each body written by the thread that reads it, as bahost's transfer thread does), GRDB, and
// PARALLEL threads for the syncs. No queue turns, no extension, no policy: what separates this program from
// durable_floor.c is Swift's and GRDB's cost, and what separates bahost from this program is bahost's own
// (docs/performance/DECISIONS.md #21, #26).
//
//   bahost-library-floor URLS OUTDIR DATABASE [PARALLEL]     URLS: one URL a line; files are OUTDIR/1.bin, ...
//
// Prints nothing on success; exits 1 with a message on the first failure.
import CCurl
import Foundation
import GRDB
import Synchronization

func fail(_ what: String) -> Never {
    FileHandle.standardError.write(Data("bahost-library-floor: \(what)\n".utf8))
    exit(1)
}

/// One file on the network: its descriptor, written by the write callback.
final class Fetch: Sendable {
    let index: Int
    let fd: Int32
    let partial: String

    init(index: Int, fd: Int32, partial: String) {
        self.index = index
        self.fd = fd
        self.partial = partial
    }
}

let writeBody: bahost_curl_data_callback = { bytes, size, count, context in
    let fetch = Unmanaged<Fetch>.fromOpaque(context!).takeUnretainedValue()
    var offset = 0
    let total = size * count
    while offset < total {
        let n = write(fetch.fd, bytes! + offset, total - offset)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return 0 }
        offset += n
    }
    return total
}

/// One run: every URL fetched, synced, renamed and recorded, `parallel` on the network at a time.
final class Floor: @unchecked Sendable {
    let urls: [String]
    let outdir: String
    let parallel: Int
    let queue: DatabasePool
    let syncers = OperationQueue()
    let done = Mutex(0)
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
        syncers.maxConcurrentOperationCount = parallel
    }

    private func path(_ index: Int, _ suffix: String = "") -> String { "\(outdir)/\(index + 1).bin\(suffix)" }

    /// Fetches every URL on this thread, `parallel` at a time; the syncs run beside it.
    func run() {
        guard !urls.isEmpty else { return }
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        guard let multi = curl_multi_init() else { fail("curl_multi_init") }
        var next = 0
        var active = 0
        func start() {
            let index = next
            next += 1
            let partial = path(index, ".partial")
            let fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { fail("\(partial): \(String(cString: strerror(errno)))") }
            guard let easy = curl_easy_init() else { fail("curl_easy_init") }
            let fetch = Unmanaged.passRetained(Fetch(index: index, fd: fd, partial: partial)).toOpaque()
            _ = bahost_curl_set_string(easy, CURLOPT_URL, urls[index])
            _ = bahost_curl_set_callback(easy, CURLOPT_WRITEFUNCTION, writeBody)
            _ = bahost_curl_set_pointer(easy, CURLOPT_WRITEDATA, fetch)
            _ = bahost_curl_set_pointer(easy, CURLOPT_PRIVATE, fetch)
            _ = bahost_curl_set_long(easy, CURLOPT_FAILONERROR, 1)
            curl_multi_add_handle(multi, easy)
            active += 1
        }
        while next < urls.count && active < parallel { start() }
        var running: Int32 = 0
        while active > 0 {
            curl_multi_perform(multi, &running)
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                let fetch = Unmanaged<Fetch>.fromOpaque(bahost_curl_info_private(easy)!).takeRetainedValue()
                guard message.pointee.data.result == CURLE_OK else {
                    fail("\(urls[fetch.index]): \(String(cString: curl_easy_strerror(message.pointee.data.result)))")
                }
                curl_multi_remove_handle(multi, easy)
                curl_easy_cleanup(easy)
                active -= 1
                // The sync waits for the disk: off the fetching thread, as bahost's transfers do; the connection
                // takes the next URL meanwhile, as curl's does in durable_floor.c.
                syncers.addOperation { self.finish(fetch) }
                if next < urls.count { start() }
            }
            if active > 0 { curl_multi_poll(multi, nil, 0, 1000, nil) }
        }
        finished.wait()
        curl_multi_cleanup(multi)
    }

    private func finish(_ fetch: Fetch) {
        guard fsync(fetch.fd) == 0 else { fail("fsync: \(String(cString: strerror(errno)))") }
        close(fetch.fd)
        let final = path(fetch.index)
        guard rename(fetch.partial, final) == 0 else { fail("rename: \(String(cString: strerror(errno)))") }
        do {
            try queue.write { db in
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO finished (id, path) VALUES (?, ?)")
                    .execute(arguments: [fetch.index, final])
            }
        } catch {
            fail("the queue: \(error)")
        }
        let all = done.withLock { done -> Bool in
            done += 1
            return done == urls.count
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
