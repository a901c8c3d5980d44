import Crypto
import Foundation
import Packs
import Synchronization
import Testing
import TestSupport
import Transfer
@testable import PackServer

/// `bahost serve` against bahost's own HTTP client, over TLS with a CA the test makes.
@Suite(.ownThreads) struct PackServerTests {
    final class Observer: TransferObserver, Sendable {
        let offsets = Mutex<[Int64]>([])
        func began(validator: Validator, resumingAt offset: Int64) { offsets.withLock { $0.append(offset) } }
        func progress(received: Int64, expected: Int64) {}
    }

    @Test func theManifestAndEachPackAreServedAndAResumeGetsTheRest() async throws {
        let root = TestPlugins.scratch.appendingPathComponent("serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let certificates = try TestCertificates(in: root)
        // Incompressible, so the archive is large enough to resume in the middle.
        let archive = try TestPacks.randomBlob("blob", size: 300_000, in: root)
        let requests = Mutex<[String]>([])
        let server = try await PackServer.start(
            host: "127.0.0.1", port: 0, certificate: certificates.serverCertificate, key: certificates.serverKey,
            archives: [archive], log: { line in requests.withLock { $0.append(line) } })
        let client = try TransferClient(TransferConfiguration(additionalCAFile: certificates.caFile))

        // The download manifest names the pack at the base URL + its ID.
        let manifestPath = root.appendingPathComponent("download-manifest.json").path
        let fetched = await client.perform(
            TransferRequest(url: server.manifestURL, expectedSize: 0, partialPath: manifestPath, checkURL: { _ in nil }),
            observer: Observer())
        #expect(throws: Never.self) { try fetched.get() }
        let manifest = try DownloadManifest(data: Data(contentsOf: URL(fileURLWithPath: manifestPath)))
        let entry = try #require(manifest.assetPacks.first)
        #expect(entry.url == server.baseURL + "blob")

        // Half the archive, as an interrupted transfer leaves it; the client resumes with Range and If-Range.
        let whole = try Data(contentsOf: URL(fileURLWithPath: archive))
        let partial = root.appendingPathComponent("blob.part").path
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: partial))
        let observer = Observer()
        let result = await client.perform(
            TransferRequest(
                url: entry.url, expectedSize: entry.downloadSize, sha256: entry.sha256, partialPath: partial,
                validator: Validator(etag: "\"\(entry.sha256)\"", lastModified: nil), checkURL: { _ in nil }),
            observer: observer)
        #expect(try result.get() == Int64(whole.count))
        #expect(observer.offsets.withLock { $0 } == [Int64(whole.count / 2)])
        #expect(try Data(contentsOf: URL(fileURLWithPath: partial)) == whole)

        // Each file alone too, by content, for updates that fetch only what changed.
        let blob = try #require(entry.files.first)
        let objectPath = root.appendingPathComponent("blob.object").path
        let object = await client.perform(
            TransferRequest(
                url: try #require(entry.fileBaseURL) + blob.sha256, expectedSize: blob.size, sha256: blob.sha256,
                partialPath: objectPath, checkURL: { _ in nil }),
            observer: Observer())
        #expect(try object.get() == blob.size)

        // An unknown pack is a 404, which the client takes as permanent.
        let missing = await client.perform(
            TransferRequest(
                url: server.baseURL + "nope", expectedSize: 1, partialPath: root.appendingPathComponent("nope").path,
                checkURL: { _ in nil }),
            observer: Observer())
        guard case .failure(let error) = missing else { Issue.record("an unknown pack was served"); return }
        #expect(error.code == 404 && error.kind == .permanent)

        #expect(requests.withLock { $0 }.contains { $0.hasPrefix("GET /blob 206") })
        try await client.shutdown()
        try await server.close()
    }

    @Test func rangesAreReadAsRFC9110Says() {
        #expect(RequestHandler.byteRange("bytes=0-9", size: 100) == .part(0..<10))
        #expect(RequestHandler.byteRange("bytes=90-", size: 100) == .part(90..<100))
        #expect(RequestHandler.byteRange("bytes=90-500", size: 100) == .part(90..<100))
        #expect(RequestHandler.byteRange("bytes=-10", size: 100) == .part(90..<100))
        #expect(RequestHandler.byteRange("bytes=100-", size: 100) == .unsatisfiable)
        #expect(RequestHandler.byteRange("bytes=5-2", size: 100) == .unsatisfiable)
        #expect(RequestHandler.byteRange("bytes=0-1,5-6", size: 100) == .whole)
        #expect(RequestHandler.byteRange("items=0-1", size: 100) == .whole)
    }
}
