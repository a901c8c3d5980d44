@_spi(Bindings) @testable import BackgroundAssets
import CBAExtension
import Foundation
import Testing

/// Apple's names, raw values and semantics, and that they agree with the C ABI. Serialized: some tests change
/// the state of the one shared `BADownloadManager`.
@Suite(.serialized) struct SDKTests {
    @Test func errorCodesHaveApplesRawValuesAndMatchTheCABI() {
        let pairs: [(BAErrorCode, ba_error_code_t)] = [
            (.downloadInvalid, BA_ERROR_DOWNLOAD_INVALID),
            (.callFromExtensionNotAllowed, BA_ERROR_CALL_FROM_EXTENSION_NOT_ALLOWED),
            (.callFromInactiveProcessNotAllowed, BA_ERROR_CALL_FROM_INACTIVE_PROCESS_NOT_ALLOWED),
            (.callerConnectionNotAccepted, BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED),
            (.callerConnectionInvalid, BA_ERROR_CALLER_CONNECTION_INVALID),
            (.downloadAlreadyScheduled, BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED),
            (.downloadNotScheduled, BA_ERROR_DOWNLOAD_NOT_SCHEDULED),
            (.downloadFailedToStart, BA_ERROR_DOWNLOAD_FAILED_TO_START),
            (.downloadAlreadyFailed, BA_ERROR_DOWNLOAD_ALREADY_FAILED),
            (.downloadEssentialDownloadNotPermitted, BA_ERROR_DOWNLOAD_ESSENTIAL_DOWNLOAD_NOT_PERMITTED),
            (.downloadBackgroundActivityProhibited, BA_ERROR_DOWNLOAD_BACKGROUND_ACTIVITY_PROHIBITED),
            (.downloadWouldExceedAllowance, BA_ERROR_DOWNLOAD_WOULD_EXCEED_ALLOWANCE),
            (.downloadDoesNotExist, BA_ERROR_DOWNLOAD_DOES_NOT_EXIST),
            (.sessionDownloadDisallowedByDomain, BA_ERROR_SESSION_DOWNLOAD_DISALLOWED_BY_DOMAIN),
            (.sessionDownloadDisallowedByAllowance, BA_ERROR_SESSION_DOWNLOAD_DISALLOWED_BY_ALLOWANCE),
            (.sessionDownloadAllowanceExceeded, BA_ERROR_SESSION_DOWNLOAD_ALLOWANCE_EXCEEDED),
            (.sessionDownloadNotPermittedBeforeAppLaunch, BA_ERROR_SESSION_DOWNLOAD_NOT_PERMITTED_BEFORE_APP_LAUNCH),
        ]
        #expect(pairs.map(\.0.rawValue) == [0, 50, 51, 55, 56, 100, 101, 102, 103, 109, 111, 112, 113, 202, 203, 204, 206])
        for (swift, c) in pairs { #expect(swift.rawValue == Int(c.rawValue)) }
        #expect(BAErrorCode(rawValue: 42) == nil)
        #expect(BAErrorDomain == "BAErrorDomain")
        #expect(BAErrorDomain == BA_ERROR_DOMAIN)
    }

    @Test func enumsHaveApplesRawValues() {
        #expect([BAContentRequest.install, .update, .periodic, .languageChange].map(\.rawValue) == [1, 2, 3, 4])
        #expect([BADownload.State.failed, .created, .waiting, .downloading, .finished].map(\.rawValue) == [-1, 0, 1, 2, 3])
        #expect(BADownload.Priority.min.rawValue < BADownload.Priority.default.rawValue)
        #expect(BADownload.Priority.default.rawValue < BADownload.Priority.max.rawValue)
        #expect(BADownload.Priority(7) == BADownload.Priority(rawValue: 7))
    }

    func levelOne(essential: Bool = true) -> BAURLDownload {
        var request = URLRequest(url: URL(string: "https://assets.example.com/l1.pack")!)
        request.setValue("Bearer t", forHTTPHeaderField: "Authorization")
        return BAURLDownload(
            identifier: "level-1", request: request, essential: essential, fileSize: 1024,
            applicationGroupIdentifier: "group.g", priority: .max)
    }

    @Test func urlDownloadKeepsWhatItWasGiven() {
        let download = levelOne()
        #expect(download.identifier == "level-1")
        #expect(download.isEssential)
        #expect(download.priority == .max)
        #expect(download.state == .created)
        #expect(download.uniqueIdentifier.hasPrefix("BAURLDownload.group.g."))
        let short = BAURLDownload(
            identifier: "x", request: URLRequest(url: URL(string: "https://a.example.com")!), fileSize: 9,
            applicationGroupIdentifier: "group.g")
        #expect(!short.isEssential && short.priority == .default && short.fileSize == 9)
    }

    @Test func eachDownloadGetsAFreshRandomUUID() throws {
        let identifiers = (0..<200).map { _ in levelOne().uniqueIdentifier }
        #expect(Set(identifiers).count == identifiers.count)
        for identifier in identifiers {
            let uuid = try #require(UUID(uuidString: String(identifier.dropFirst("BAURLDownload.group.g.".count))))
            // RFC 4122's random UUID: version 4, variant 10xx.
            #expect(uuid.uuid.6 >> 4 == 4 && uuid.uuid.8 >> 6 == 0b10)
        }
    }

    @available(*, deprecated)
    @Test func deprecatedInitializersMakeNonEssentialDownloadsOfUnknownSize() {
        let request = URLRequest(url: URL(string: "https://a.example.com")!)
        let plain = BAURLDownload(identifier: "a", request: request, applicationGroupIdentifier: "g")
        let prioritized = BAURLDownload(identifier: "b", request: request, applicationGroupIdentifier: "g", priority: .min)
        #expect(!plain.isEssential && plain.fileSize == 0 && plain.priority == .default)
        #expect(!prioritized.isEssential && prioritized.priority == .min)
    }

    @Test func copiesAreEqualAndOfTheSameClass() throws {
        let download = levelOne()
        let copy = try #require(download.copy() as? BAURLDownload)
        #expect(copy == download)
        #expect(copy.hash == download.hash)
        #expect(copy.request.url == download.request.url)
        #expect(Set<BADownload>([download, copy]).count == 1)
        // A different object for the same asset is a different download.
        #expect(levelOne() != download)
    }

    @Test func removingEssentialCopiesAsNonEssential() {
        let download = levelOne()
        let relaxed = download.removingEssential()
        #expect(type(of: relaxed) == BAURLDownload.self)
        #expect(!relaxed.isEssential)
        #expect(download.isEssential)
        #expect(relaxed.identifier == download.identifier && relaxed.uniqueIdentifier == download.uniqueIdentifier)
    }

    @Test func downloadsRoundTripThroughTheCABI() throws {
        let download = levelOne()
        let back = ABIDownload.with(download) { ABIDownload.object($0.pointee) }
        let url = try #require(back as? BAURLDownload)
        #expect(url.identifier == "level-1" && url.uniqueIdentifier == download.uniqueIdentifier)
        #expect(url.isEssential && url.fileSize == 1024 && url.priority == .max)
        #expect(url.request.url == download.request.url)
        #expect(url.request.value(forHTTPHeaderField: "Authorization") == "Bearer t")
    }

    /// Apple's `allowsExpensiveNetworkAccess` and `allowsConstrainedNetworkAccess`, which swift-corelibs-foundation
    /// lacks, set on the request as on Apple, reach the C ABI's `network_access` and come back; the header that
    /// carries them inside the `URLRequest` is never one of the download's headers. `allowsCellularAccess = false`
    /// reads as no expensive networks.
    @Test func networkAccessIsTheRequestsAndCrossesTheCABI() throws {
        var request = URLRequest(url: URL(string: "https://cdn.example.com/hd.pack")!)
        #expect(request.allowsExpensiveNetworkAccess && request.allowsConstrainedNetworkAccess)
        request.allowsExpensiveNetworkAccess = false
        request.allowsConstrainedNetworkAccess = false
        request.allowsConstrainedNetworkAccess = true
        let download = BAURLDownload(
            identifier: "hd", request: request, essential: false, fileSize: 10, applicationGroupIdentifier: "g",
            priority: .default)
        #expect(download.headerLines.isEmpty)
        let bits = ABIDownload.with(download) { $0.pointee.network_access }
        #expect(bits == UInt64(BA_NETWORK_ACCESS_AVOIDS_EXPENSIVE.rawValue))
        let back = try #require(ABIDownload.with(download) { ABIDownload.object($0.pointee) } as? BAURLDownload)
        #expect(!back.request.allowsExpensiveNetworkAccess && back.request.allowsConstrainedNetworkAccess)
        #expect(back.headerLines.isEmpty)

        var cellular = URLRequest(url: URL(string: "https://cdn.example.com/hd.pack")!)
        cellular.allowsCellularAccess = false
        #expect(!cellular.allowsExpensiveNetworkAccess)
    }

    @Test func theManifestIsNotABAURLDownload() {
        let manifest = BAManifestDownload(
            identifier: "manifest", priority: .default, isEssential: false, applicationGroupIdentifier: "g",
            fileSize: 0)
        let back = ABIDownload.with(manifest) { ABIDownload.object($0.pointee) }
        #expect(type(of: back) != BAURLDownload.self)
        #expect(back.identifier == "manifest")
    }

    @Test func withoutAServiceTheManagerSaysTheConnectionIsInvalidAndWithoutAnIdentityNotAccepted() {
        let manager = BADownloadManager.shared
        #expect(manager.delegate == nil)
        let original = manager.transport
        defer { manager.transport = original }
        let socket = FileManager.default.temporaryDirectory.appendingPathComponent("no-service-\(UUID()).sock").path
        for (identity, code) in [("com.example.levels", BAErrorCode.callerConnectionInvalid), (nil, .callerConnectionNotAccepted)] {
            manager.transport = ServiceTransport(socketPath: socket, appIdentifier: identity)
            for call in [
                { try manager.scheduleDownload(self.levelOne(essential: false)) },
                { try manager.cancel(self.levelOne()) },
                { _ = try manager.fetchCurrentDownloads() },
            ] {
                let error = #expect(throws: NSError.self) { try call() }
                #expect(error?.domain == BAErrorDomain && error?.code == code.rawValue)
            }
        }
    }

    @Test func schedulingInsideTheContentRequestThrows50() {
        let manager = BADownloadManager.shared
        manager.answeringContentRequest.withLock { $0 = true }
        defer { manager.answeringContentRequest.withLock { $0 = false } }
        let error = #expect(throws: NSError.self) { try manager.scheduleDownload(self.levelOne(essential: false)) }
        #expect(error?.code == BAErrorCode.callFromExtensionNotAllowed.rawValue)
    }

    @Test func exclusiveControlDatesBecomeTimeouts() {
        #expect(BADownloadManager.milliseconds(until: Date()) == 0)
        #expect(BADownloadManager.milliseconds(until: Date(timeIntervalSinceNow: -5)) == 0)
        let later = BADownloadManager.milliseconds(until: Date(timeIntervalSinceNow: 2))
        #expect(later > 1900 && later <= 2000)
    }
}
