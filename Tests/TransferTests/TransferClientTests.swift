import Foundation
import Synchronization
import Testing
import TestSupport
@testable import Transfer

/// One transfer attempt at a time, against nginx and against the fault server.
@Suite(.ownThreads) struct TransferClientTests {
    static let faults = try! FaultServer()
    /// A large body's size, to which the tests of one add a few megabytes.
    static let largeBody: Int64 = 8 << 20

    final class Recorder: TransferObserver, Sendable {
        let began = Mutex<[(Validator, Int64)]>([])
        func began(validator: Validator, resumingAt offset: Int64) { began.withLock { $0.append((validator, offset)) } }
        func progress(received: Int64, expected: Int64) {}
        let bodiesEnded = Mutex(0)
        func bodyEnded() { bodiesEnded.withLock { $0 += 1 } }
    }

    /// A recorder whose progress takes a while, as the engine's does (it hops to record it): a cancel then finds the
    /// task outside its wait for the exchange's next event.
    final class SlowRecorder: TransferObserver, Sendable {
        let began = Mutex(false)
        func began(validator: Validator, resumingAt offset: Int64) { began.withLock { $0 = true } }
        func progress(received: Int64, expected: Int64) async { try? await Task.sleep(for: .milliseconds(5)) }
        func bodyEnded() {}
    }

    func data(_ count: Int, seed: UInt8 = 7) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    func partial() -> String { TestPlugins.scratch.appendingPathComponent("\(UUID().uuidString).part").path }

    func request(
        _ url: String, size: Int, path: String, validator: Validator? = nil, sha256: String? = nil,
        byteLimit: Int64? = nil, check: @escaping @Sendable (String) -> TransferError? = { _ in nil }
    ) -> TransferRequest {
        TransferRequest(
            url: url, expectedSize: Int64(size), sha256: sha256, partialPath: path, validator: validator,
            byteLimit: byteLimit, checkURL: check)
    }

    /// Runs `body` with a client that is shut down however `body` ends (its transfer thread stops then). The read
    /// timeout is long: tests share two cores, and a starved consumer is not a silent server.
    func withClient(
        readTimeout: Duration = .seconds(30), ca: String? = nil, connectTimeout: Duration = .seconds(10),
        minimumRate: MinimumRate = .default, _ body: (TransferClient) async throws -> Void
    ) async throws {
        let client = try TransferClient(
            TransferConfiguration(
                additionalCAFile: ca, connectTimeout: connectTimeout, readTimeout: readTimeout, minimumRate: minimumRate))
        do {
            try await body(client)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    func contents(_ path: String) -> Data { FileManager.default.contents(atPath: path) ?? Data() }

    @Test func downloadsFromNginxAndVerifiesTheChecksum() async throws {
        let body = data(1_500_000)
        let name = "plain/whole-\(UUID().uuidString)"
        try Nginx.shared.serve(body, at: name)
        try await withClient { client in
            let path = partial()
            let sha = "8f1d\(String(repeating: "0", count: 60))"
            let wrong = await client.perform(request(Nginx.shared.http(name), size: body.count, path: path, sha256: sha), observer: Recorder())
            guard case .failure(let error) = wrong else { Issue.record("a wrong checksum passed"); return }
            #expect(error.code == TransferError.checksumMismatch && error.kind == .permanent, "\(error)")
            #expect(!FileManager.default.fileExists(atPath: path))

            let right = await client.perform(
                request(Nginx.shared.http(name), size: body.count, path: path, sha256: Self.sha256(body)), observer: Recorder())
            let rightSize = try right.get()
            #expect(rightSize == Int64(body.count))
            #expect(contents(path) == body)
        }
    }

    @Test func resetMidBodyResumesWithRangeAndIfRange() async throws {
        let body = data(400_000)
        let name = "reset-\(UUID().uuidString)"
        Self.faults.serve(body, at: name, faults: [.reset(afterBytes: 100_000)])
        try await withClient { client in
            let path = partial()
            let recorder = Recorder()
            let first = await client.perform(request(Self.faults.url(name), size: body.count, path: path), observer: recorder)
            guard case .failure(let error) = first else { Issue.record("a reset passed"); return }
            #expect(error.kind == .transient)
            let kept = contents(path)
            #expect(kept.count > 0 && kept.count <= 100_000 && kept == body.prefix(kept.count))

            let validator = try #require(recorder.began.withLock { $0.first?.0 })
            let second = await client.perform(
                request(Self.faults.url(name), size: body.count, path: path, validator: validator), observer: recorder)
            let secondSize = try second.get()
            #expect(secondSize == Int64(body.count))
            #expect(contents(path) == body)
            let resumed = try #require(Self.faults.requests(for: name).last)
            #expect(resumed.range == "bytes=\(kept.count)-")
            #expect(resumed.ifRange == validator.etag)
            #expect(recorder.began.withLock { $0.last?.1 } == Int64(kept.count))
        }
    }

    /// A URL whose port no TCP port can be fails as a bad URL, whoever vetted it (the HTTP client would trap).
    @Test func aPortBeyond65535IsABadURLNotACrash() async throws {
        try await withClient { client in
            let result = await client.perform(
                request("http://127.0.0.1:8078079/level.pack", size: 10, path: partial()), observer: Recorder())
            guard case .failure(let error) = result else {
                Issue.record("a request to port 8078079 did not fail: \(result)")
                return
            }
            #expect(error.code == -1000 && error.kind == .permanent, "\(error)")
        }
    }

    /// A transfer cancelled mid-body (a cancel, an uninstall, the service stopping) ends at once as cancelled
    /// (-999, transient), with what arrived kept in the partial file to resume from.
    @Test func aCancelledTransferStopsAtOnceAndKeepsItsBytes() async throws {
        let body = data(200_000)
        let name = "cancelled-\(UUID().uuidString)"
        Self.faults.serve(body, at: name, faults: [.trickle(chunk: 10_000, every: .milliseconds(100))])
        let path = partial()
        try await withClient { client in
            let transfer = Task {
                await client.perform(
                    request(Self.faults.url(name), size: body.count, path: path), observer: Recorder())
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while contents(path).isEmpty && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            let cancelledAt = ContinuousClock.now
            transfer.cancel()
            let result = await transfer.value
            #expect(ContinuousClock.now - cancelledAt < .seconds(2))
            guard case .failure(let error) = result else {
                Issue.record("a cancelled transfer finished: \(result)")
                return
            }
            #expect(error.code == -999 && error.kind == .transient, "\(error)")
            let kept = contents(path)
            #expect(kept.count > 0 && kept.count < body.count && kept == body.prefix(kept.count))
        }
    }

    /// A cancel while the body pours in: the task takes its file back while the transfer thread is still writing
    /// (the abort it posted comes after). What arrives then is dropped, never written to a file no longer lent, and
    /// what was written is the body's prefix.
    @Test func aCancelWhileTheBodyPoursInKeepsAPrefix() async throws {
        let body = data(48 << 20, seed: 3)
        let name = "plain/pouring-\(UUID().uuidString)"
        try Nginx.shared.serve(body, at: name)
        try await withClient { client in
            for round in 0..<6 {
                // Several at once on the one transfer thread: it spends long stretches in their callbacks before it
                // takes the aborts the cancels post.
                let paths = (0..<6).map { _ in partial() }
                let recorders = paths.map { _ in SlowRecorder() }
                let transfers = zip(paths, recorders).map { path, recorder in
                    Task {
                        await client.perform(
                            request(Nginx.shared.http(name), size: body.count, path: path), observer: recorder)
                    }
                }
                // The file is lent just after `began`: the cancels come while the bodies are written.
                let deadline = ContinuousClock.now + .seconds(10)
                while recorders.contains(where: { !$0.began.withLock { $0 } }) && ContinuousClock.now < deadline {
                    await Task.yield()
                }
                try await Task.sleep(for: .milliseconds(round % 3))
                for transfer in transfers { transfer.cancel() }
                for (path, transfer) in zip(paths, transfers) {
                    let result = await transfer.value
                    let kept = contents(path)
                    #expect(kept == body.prefix(kept.count), "round \(round): the kept bytes are not the body's prefix")
                    if case .failure(let error) = result {
                        #expect(error.code == -999, "round \(round): \(error)")
                    }
                    unlink(path)
                }
            }
        }
    }

    /// The checksum is computed as the body arrives; a resumed transfer hashes the bytes kept from before first, so
    /// the whole file is what is checked, and a wrong checksum still fails it.
    @Test func aResumedDownloadIsVerifiedWhole() async throws {
        let body = data(400_000)
        for (index, sha) in [Self.sha256(body), Self.sha256(body.prefix(399_999) + Data([0]))].enumerated() {
            let name = "reset-sha-\(index)-\(UUID().uuidString)"
            Self.faults.serve(body, at: name, faults: [.reset(afterBytes: 150_000)])
            try await withClient { client in
                let path = partial()
                let recorder = Recorder()
                let first = await client.perform(
                    request(Self.faults.url(name), size: body.count, path: path, sha256: sha), observer: recorder)
                guard case .failure(let error) = first, error.kind == .transient else {
                    Issue.record("a reset did not fail transiently: \(first)")
                    return
                }
                #expect(contents(path).count > 0)
                let validator = try #require(recorder.began.withLock { $0.first?.0 })
                let second = await client.perform(
                    request(Self.faults.url(name), size: body.count, path: path, validator: validator, sha256: sha),
                    observer: recorder)
                #expect(Self.faults.requests(for: name).last?.range != nil)
                if index == 0 {
                    #expect(try second.get() == Int64(body.count))
                    #expect(contents(path) == body)
                } else {
                    guard case .failure(let error) = second else { Issue.record("a wrong checksum passed"); return }
                    #expect(error.code == TransferError.checksumMismatch)
                }
            }
        }
    }

    @Test func truncatedBodyIsTransientAndResumes() async throws {
        let body = data(300_000)
        let name = "truncate-\(UUID().uuidString)"
        Self.faults.serve(body, at: name, faults: [.truncate(afterBytes: 50_000)])
        try await withClient { client in
            let path = partial()
            let recorder = Recorder()
            guard case .failure(let error) = await client.perform(request(Self.faults.url(name), size: body.count, path: path), observer: recorder)
            else { Issue.record("a truncated body passed"); return }
            #expect(error.kind == .transient)
            // A body cut short does not free the transfer's slot early (the engine counts an ended body as off the
            // network); the whole one does, once.
            #expect(recorder.bodiesEnded.withLock { $0 } == 0)
            let validator = recorder.began.withLock { $0.first?.0 }
            let done = try await client.perform(request(Self.faults.url(name), size: body.count, path: path, validator: validator), observer: recorder).get()
            #expect(done == Int64(body.count))
            #expect(contents(path) == body)
            #expect(recorder.bodiesEnded.withLock { $0 } == 1)
        }
    }

    /// A body of many megabytes (past the page cache's write-behind step, many of libcurl's buffers) keeps the
    /// promises of a small one. Its bytes land whole and in order (checked by its SHA-256, computed as they are
    /// written); a body cut short leaves every byte that arrived written before the attempt ends, and is resumed from
    /// there; a byte limit still stops it; the body's end frees the slot once, and only when whole.
    @Test func aLargeBodyKeepsEveryPromise() async throws {
        let size = Int(Self.largeBody) + (4 << 20)
        let body = try #require(FileHandle(forReadingAtPath: "/dev/urandom")?.readData(ofLength: size))
        let name = "large-\(UUID().uuidString)"
        let cut = Int(Self.largeBody) + (2 << 20) + 12_345
        Self.faults.serve(body, at: name, faults: [.truncate(afterBytes: cut)])
        try Nginx.shared.serve(body, at: "plain/\(name)")
        try await withClient { client in
            let whole = partial()
            let done = await client.perform(
                request(Nginx.shared.http("plain/\(name)"), size: size, path: whole, sha256: Self.sha256(body)),
                observer: Recorder())
            let doneSize = try done.get()
            #expect(doneSize == Int64(size))
            #expect(contents(whole) == body)

            let path = partial()
            let recorder = Recorder()
            guard case .failure(let error) = await client.perform(
                request(Self.faults.url(name), size: size, path: path), observer: recorder)
            else { Issue.record("a truncated body passed"); return }
            #expect(error.kind == .transient)
            #expect(contents(path) == body.prefix(cut))
            #expect(recorder.bodiesEnded.withLock { $0 } == 0)
            let validator = recorder.began.withLock { $0.first?.0 }
            let resumed = await client.perform(
                request(Self.faults.url(name), size: size, path: path, validator: validator, sha256: Self.sha256(body)),
                observer: recorder)
            let resumedSize = try resumed.get()
            #expect(resumedSize == Int64(size))
            #expect(contents(path) == body)
            #expect(recorder.bodiesEnded.withLock { $0 } == 1)

            let limited = partial()
            let limit = Self.largeBody + (1 << 20)
            let url = Nginx.shared.http("plain/\(name)")
            guard case .failure(let passed) = await client.perform(
                request(url, size: 0, path: limited, byteLimit: limit), observer: Recorder())
            else { Issue.record("the limit was passed"); return }
            #expect(passed.code == TransferError.byteLimitExceeded, "\(passed)")
            #expect(!FileManager.default.fileExists(atPath: limited))
        }
    }

    @Test func serverThatAnswers200ToARangeRestartsTheFileCleanly() async throws {
        let body = data(200_000)
        let name = "ignores-range-\(UUID().uuidString)"
        Self.faults.serve(body, at: name, faults: [.reset(afterBytes: 80_000), .ignoreRange])
        try await withClient { client in
            let path = partial()
            let recorder = Recorder()
            _ = await client.perform(request(Self.faults.url(name), size: body.count, path: path), observer: recorder)
            let validator = recorder.began.withLock { $0.first?.0 }
            let done = try await client.perform(request(Self.faults.url(name), size: body.count, path: path, validator: validator), observer: recorder).get()
            #expect(done == Int64(body.count))
            #expect(contents(path) == body)
            #expect(recorder.began.withLock { $0.last?.1 } == 0)
        }
    }

    @Test func contentThatChangedBetweenAttemptsIsFetchedWholeNotMixed() async throws {
        let old = data(200_000, seed: 1)
        let new = data(200_000, seed: 2)
        let name = "changes-\(UUID().uuidString)"
        Self.faults.serve(old, at: name, faults: [.reset(afterBytes: 90_000), .replace(new)])
        try await withClient { client in
            let path = partial()
            let recorder = Recorder()
            _ = await client.perform(request(Self.faults.url(name), size: old.count, path: path), observer: recorder)
            let validator = recorder.began.withLock { $0.first?.0 }
            let done = try await client.perform(request(Self.faults.url(name), size: new.count, path: path, validator: validator), observer: recorder).get()
            #expect(done == Int64(new.count))
            #expect(contents(path) == new)
        }
    }

    @Test func rangeNotSatisfiableRestartsTheFile() async throws {
        let body = data(10_000)
        let name = "416-\(UUID().uuidString)"
        Self.faults.serve(body, at: name)
        let path = partial()
        // Bytes on disk past the server's end, with a validator: the server answers 416, and the file starts over.
        try data(20_000).prefix(12_000).write(to: URL(fileURLWithPath: path))
        try await withClient { client in
            let result = await client.perform(
                request(Self.faults.url(name), size: 0, path: path, validator: Validator(etag: FaultServer.etag(body), lastModified: nil)),
                observer: Recorder())
            let resultSize = try result.get()
            #expect(resultSize == Int64(body.count))
            #expect(contents(path) == body)
            #expect(Self.faults.requests(for: name).map(\.range) == ["bytes=12000-", nil])
        }
    }

    @Test func transientAndPermanentStatuses() async throws {
        try await withClient { client in
            let cases: [(FaultServer.Fault, TransferError.Kind, Int64, Duration?)] = [
                (.status(503, retryAfter: "2"), .transient, 503, .seconds(2)),
                (.status(429, retryAfter: nil), .transient, 429, nil),
                (.status(408, retryAfter: nil), .transient, 408, nil),
                (.status(404, retryAfter: nil), .permanent, 404, nil),
                (.status(403, retryAfter: nil), .permanent, 403, nil),
                (.wrongLength(999), .permanent, TransferError.sizeMismatch, nil),
            ]
            for (fault, kind, code, retryAfter) in cases {
                let name = "status-\(UUID().uuidString)"
                Self.faults.serve(data(1000), at: name, faults: [fault])
                let path = partial()
                guard case .failure(let error) = await client.perform(request(Self.faults.url(name), size: 1000, path: path), observer: Recorder())
                else { Issue.record("\(fault) passed"); continue }
                #expect(error.kind == kind && error.code == code, "\(fault)")
                #expect(error.retryAfter == retryAfter, "\(fault)")
                if kind == .permanent { #expect(!FileManager.default.fileExists(atPath: path), "\(fault) left its file") }
        }
        }
    }

    @Test func everyRedirectHopIsVetted() async throws {
        let body = data(5000)
        let target = "target-\(UUID().uuidString)"
        Self.faults.serve(body, at: target)
        let allowed = "hop-\(UUID().uuidString)"
        Self.faults.serve(Data(), at: allowed, faults: [.redirect("/\(target)")])
        let offList = "off-list-\(UUID().uuidString)"
        Self.faults.serve(Data(), at: offList, faults: [.redirect("http://localhost:\(Self.faults.port)/\(target)")])
        let onlyLoopbackIP: @Sendable (String) -> TransferError? = { url in
            URLComponents(string: url)?.host == "127.0.0.1"
                ? nil : TransferError(.permanent, code: 202, domain: "BAErrorDomain", message: "\(url) is not on the list")
        }
        try await withClient { client in
            let followed = await client.perform(
                request(Self.faults.url(allowed), size: body.count, path: partial(), check: onlyLoopbackIP), observer: Recorder())
            let followedSize = try followed.get()
            #expect(followedSize == Int64(body.count))
            let refused = await client.perform(
                request(Self.faults.url(offList), size: body.count, path: partial(), check: onlyLoopbackIP), observer: Recorder())
            guard case .failure(let error) = refused else { Issue.record("a redirect off the list was followed"); return }
            #expect(error.code == 202 && error.error.domain == "BAErrorDomain" && error.kind == .permanent)
        }
    }

    @Test func aServerThatGoesSilentTimesOutAndTheTransferResumes() async throws {
        let body = data(40_000)
        let name = "trickle-\(UUID().uuidString)"
        Self.faults.serve(body, at: name, faults: [.trickle(chunk: 10_000, every: .milliseconds(600))])
        try await withClient(readTimeout: .milliseconds(300)) { client in
            let path = partial()
            let recorder = Recorder()
            guard case .failure(let error) = await client.perform(request(Self.faults.url(name), size: body.count, path: path), observer: recorder)
            else { Issue.record("a silent server did not time out"); return }
            #expect(error.kind == .transient && error.code == -1001)
            let validator = recorder.began.withLock { $0.first?.0 }
            let done = try await client.perform(request(Self.faults.url(name), size: body.count, path: path, validator: validator), observer: recorder).get()
            #expect(done == Int64(body.count))
            #expect(contents(path) == body)
        }
    }

    /// A server that sends just often enough for the read timeout, but too little, gives the transfer up as timed
    /// out once a stretch of the minimum rate has passed: the slot is freed, and the retry resumes what came.
    @Test func aServerThatSendsTooSlowlyTimesOutAndTheTransferResumes() async throws {
        let body = data(40_000)
        let name = "slow-\(UUID().uuidString)"
        // 1,000 bytes a second, against at least 20,000 in every second.
        Self.faults.serve(body, at: name, faults: [.trickle(chunk: 100, every: .milliseconds(100))])
        try await withClient(minimumRate: MinimumRate(bytes: 20_000, window: .seconds(1))) { client in
            let path = partial()
            let recorder = Recorder()
            guard case .failure(let error) = await client.perform(request(Self.faults.url(name), size: body.count, path: path), observer: recorder)
            else { Issue.record("a server sending 1,000 bytes a second kept up with 20,000"); return }
            #expect(error.kind == .transient && error.code == -1001, "\(error)")
            #expect(error.error.message.contains("s; a transfer must bring at least 20000 bytes every 1.0 s"), "\(error)")
            let kept = contents(path).count
            #expect(kept > 0 && kept < body.count)
            let validator = recorder.began.withLock { $0.first?.0 }
            let done = try await client.perform(request(Self.faults.url(name), size: body.count, path: path, validator: validator), observer: recorder).get()
            #expect(done == Int64(body.count))
            #expect(contents(path) == body)
            #expect(recorder.began.withLock { $0.last?.1 } == Int64(kept))
        }
    }

    @Test func tlsWithTheTestCAAndWithoutIt() async throws {
        let body = data(70_000)
        let name = "tls/\(UUID().uuidString)"
        try Nginx.shared.serve(body, at: name)
        try await withClient(ca: Nginx.shared.caFile) { trusting in
                let path = partial()
                let done = try await trusting.perform(request(Nginx.shared.https(name), size: body.count, path: path), observer: Recorder()).get()
                #expect(done == Int64(body.count))
                #expect(contents(path) == body)
        }
        // A short connect timeout: the handshake's failure is reported at once, but no test should wait long for it.
        try await withClient(connectTimeout: .seconds(2)) { strict in
                guard case .failure(let error) = await strict.perform(request(Nginx.shared.https(name), size: body.count, path: partial()), observer: Recorder())
                else { Issue.record("an untrusted certificate was accepted"); return }
                #expect(error.kind == .permanent && error.code == -1202, "\(error)")
        }
    }

    @Test func aServerThatCannotBeReachedMeansWaitingForTheNetwork() async throws {
        let port = try Nginx.freePort()
        try await withClient(connectTimeout: .seconds(1)) { client in
            guard case .failure(let error) = await client.perform(request("http://127.0.0.1:\(port)/x", size: 10, path: partial()), observer: Recorder())
            else { Issue.record("a closed port answered"); return }
            #expect(error.kind == .network && error.code == -1004, "\(error)")
        }
    }

    @Test func noRoomOnDiskFailsBeforeAByteAndLeavesNothing() async throws {
        let name = "space-\(UUID().uuidString)"
        Self.faults.serve(data(1000), at: name)
        try await withClient { client in
            let path = partial()
            guard case .failure(let error) = await client.perform(request(Self.faults.url(name), size: 1 << 60, path: path), observer: Recorder())
            else { Issue.record("an exabyte fit"); return }
            #expect(error.code == TransferError.insufficientSpace && error.kind == .permanent)
            #expect(error.message.contains("not enough free space"))
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(Self.faults.requests(for: name).isEmpty)
        }
    }

    @Test func aByteLimitStopsATransferOfUnknownSize() async throws {
        let name = "limit-\(UUID().uuidString)"
        Self.faults.serve(data(50_000), at: name)
        try await withClient { client in
            let path = partial()
            guard case .failure(let error) = await client.perform(request(Self.faults.url(name), size: 0, path: path, byteLimit: 20_000), observer: Recorder())
            else { Issue.record("the limit was passed"); return }
            #expect(error.code == TransferError.byteLimitExceeded)
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    static func sha256(_ data: Data) -> String {
        let file = TestPlugins.scratch.appendingPathComponent(UUID().uuidString)
        try! data.write(to: file)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [file.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try! process.run()
        process.waitUntilExit()
        return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).prefix(64).lowercased()
    }
}

@Suite(.ownThreads) struct RetryPolicyTests {
    let policy = RetryPolicy(baseDelay: .seconds(1), maximumDelay: .seconds(8), maximumRetryAfter: .seconds(60), maximumAttempts: 5)
    let transient = TransferError(.transient, code: 503, domain: "x", message: "")

    @Test func backoffDoublesUpToTheMaximumWithFullJitter() {
        let full = (1...4).map { policy.delay(afterAttempt: $0, error: transient, random: { 1 }) }
        #expect(full == [.seconds(1), .seconds(2), .seconds(4), .seconds(8)])
        #expect(policy.delay(afterAttempt: 3, error: transient, random: { 0.5 }) == .seconds(2))
        #expect(policy.delay(afterAttempt: 4, error: transient, random: { 0 }) == .zero)
    }

    @Test func retryAfterIsHonouredWithinBounds() {
        var asked = transient
        asked.retryAfter = .seconds(30)
        #expect(policy.delay(afterAttempt: 1, error: asked, random: { 1 }) == .seconds(30))
        asked.retryAfter = .seconds(3600)
        #expect(policy.delay(afterAttempt: 1, error: asked, random: { 1 }) == .seconds(60))
    }

    @Test func permanentFailuresAndExhaustedAttemptsAreFinal() {
        let permanent = TransferError(.permanent, code: 404, domain: "x", message: "")
        #expect(policy.delay(afterAttempt: 1, error: permanent, random: { 1 }) == nil)
        #expect(policy.delay(afterAttempt: 5, error: transient, random: { 1 }) == nil)
        let network = TransferError(.network, code: -1004, domain: "x", message: "")
        #expect(policy.delay(afterAttempt: 1, error: network, random: { 1 }) == .seconds(1))
    }
}
