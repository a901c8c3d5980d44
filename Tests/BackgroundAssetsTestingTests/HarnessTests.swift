import BackgroundAssetsTesting
import Foundation
import Testing
import TestSupport
import Vocabulary

/// The harness as an extension author uses it, on the Swift example.
@Suite(.ownThreads) struct HarnessTests {
    let harness = ExtensionHarness(
        plugin: ExtensionHarness.builtProduct("ExampleExtension"), budget: .seconds(10),
        appGroupIdentifier: "group.com.example.levels")

    @Test func budgetIsEnforcedInOneLine() throws {
        let manifest = Data(#"{"assets": [{"id": "a", "url": "https://x.example.com/a", "size": 10}]}"#.utf8)
        let run = try harness.contentRequest(.install, manifest: manifest)
        try run.requireReturned(within: .seconds(5))
        #expect(run.downloads.map(\.identifier) == ["a"])

        let hanging = ExtensionHarness(plugin: try TestPlugins.c("misbehaving/hang_in_entry"), budget: .seconds(1))
        let stuck = try hanging.contentRequest(.install, manifest: Data())
        #expect(throws: BudgetViolation.self) { try stuck.requireReturned(within: .seconds(5)) }
    }

    @Test func failedEssentialDownloadIsRescheduledAsNonEssential() throws {
        let download = Download(
            identifier: "level-1", uniqueIdentifier: "BAURLDownload.group.com.example.levels.1",
            url: "https://assets.example.com/l1", applicationGroupIdentifier: "group.com.example.levels",
            fileSize: 100, isEssential: true)
        let run = try harness.downloadFailed(
            download, error: HostError(code: -1009, domain: "NSURLErrorDomain", message: "offline"))
        try run.requireReturned(within: .seconds(5))
        #expect(run.scheduled.map(\.identifier) == ["level-1"])
        #expect(run.scheduled.first?.isEssential == false)
        #expect(run.log == ["level-1 failed: offline"])
    }

    @Test func manifestFailureIsNotABAURLDownload() throws {
        let manifest = Download(
            kind: .manifest, identifier: "manifest", url: nil, applicationGroupIdentifier: "group.com.example.levels",
            fileSize: 0)
        let run = try harness.downloadFailed(
            manifest, error: HostError(code: 203, domain: "BAErrorDomain", message: "allowance"))
        #expect(run.stopReason == .returned)
        #expect(run.log == ["the manifest failed: allowance"])
        #expect(run.scheduled.isEmpty)
    }

    @Test func finishedFileIsMovedBeforeTheCallbackReturns() throws {
        let download = Download(
            identifier: "level-\(UUID().uuidString)", url: "https://assets.example.com/l1",
            applicationGroupIdentifier: "group.com.example.levels", fileSize: 5)
        let run = try harness.downloadFinished(download, contents: Data("hello".utf8))
        try run.requireReturned(within: .seconds(5))
        #expect(!run.leftFileBehind)
        let moved = try #require(run.container).appendingPathComponent("Assets").appendingPathComponent(download.identifier)
        #expect(try String(contentsOf: moved, encoding: .utf8) == "hello")
        #expect(run.log == ["kept \(download.identifier) at \(moved.path)"])
    }

    /// An extension without the callback leaves the file where it was: the harness says so, and the file is gone
    /// once the callback returned, as on Apple.
    @Test func aFileTheExtensionDidNotMoveIsReportedAndDeleted() throws {
        let harness = ExtensionHarness(plugin: try TestPlugins.c("probes/managed_veto"))
        let download = Download(
            identifier: "unmoved", url: "https://assets.example.com/u", applicationGroupIdentifier: "group.com.example.levels",
            fileSize: 5)
        let run = try harness.downloadFinished(download, contents: Data("hello".utf8))
        #expect(run.stopReason == .returned)
        #expect(run.leftFileBehind)
    }
}
