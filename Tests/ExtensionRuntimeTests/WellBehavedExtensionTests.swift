import ExtensionRuntime
import Foundation
import Testing
import TestSupport
import Vocabulary

@Suite(.ownThreads) struct WellBehavedExtensionTests {
    @Test func cExtensionReturnsItsDownloads() throws {
        let manifest = try TestPlugins.file(exampleManifest, name: "manifest")
        let outcome = try ExtensionWindow(pluginPath: try TestPlugins.c("example_extension")).run(
            [.contentRequest(.install, manifestPath: manifest, info: .unrestricted)])
        #expect(outcome.stopReason == .returned)
        #expect(outcome.extensionIdentifier == "com.example.levels.c-extension")
        #expect(outcome.abiVersion == "1.2")
        #expect(outcome.completedEvents == 1)
        #expect(outcome.returnedDownloads.map(\.identifier) == ["level-1", "level-2"])
        let first = try #require(outcome.returnedDownloads.first)
        #expect(first.isEssential && first.fileSize == 1_048_576 && first.priority == 100)
        #expect(first.url == "https://assets.example.com/levels/level-1.pack")
        #expect(outcome.activation != nil)
        // Apple: the manifest is deleted once downloads(for:…) returns.
        #expect(!FileManager.default.fileExists(atPath: manifest))
    }

    @Test func periodicRequestsGetNoEssentialDownloadsFromTheExample() throws {
        let outcome = try runContentRequest(try TestPlugins.c("example_extension"), .periodic, manifest: exampleManifest)
        #expect(outcome.stopReason == .returned)
        #expect(outcome.returnedDownloads.map(\.identifier) == ["level-2"])
    }

    @Test func swiftExtensionWrittenAsForAppleReturnsItsDownloads() throws {
        let manifest = """
            {"assets": [
              {"id": "level-1", "url": "https://assets.example.com/l1.pack", "size": 1048576, "essential": true},
              {"id": "level-2", "url": "https://assets.example.com/l2.pack", "size": 4096}
            ]}
            """
        let outcome = try runContentRequest(TestPlugins.swiftExample, .install, manifest: manifest)
        #expect(outcome.stopReason == .returned)
        #expect(outcome.extensionIdentifier == "ExampleExtension.LevelsExtension")
        let byID = Dictionary(uniqueKeysWithValues: outcome.returnedDownloads.map { ($0.identifier, $0) })
        #expect(Set(byID.keys) == ["level-1", "level-2"])
        #expect(byID["level-1"]?.isEssential == true)
        #expect(byID["level-1"]?.priority == 100)
        #expect(byID["level-2"]?.isEssential == false)
        #expect(byID["level-2"]?.fileSize == 4096)
        #expect(byID["level-1"]?.applicationGroupIdentifier == "group.com.example.levels")
        // The SDK gives each BAURLDownload Apple's "<ClassName>.<appGroupID>.<UUID>" identifier.
        #expect(byID["level-1"]?.uniqueIdentifier?.hasPrefix("BAURLDownload.group.com.example.levels.") == true)
        #expect(outcome.log.contains { $0.source == .output && $0.message == "returning 2 downloads for install" })
    }

    @Test func allowanceInExtensionInfoReachesTheSwiftExtension() throws {
        let manifest = """
            {"assets": [{"id": "small", "url": "https://a.example.com/s", "size": 100},
                        {"id": "large", "url": "https://a.example.com/l", "size": 5000}]}
            """
        let path = try TestPlugins.file(manifest)
        let info = AppExtensionInfo(restrictedDownloadSizeRemaining: 1000, restrictedEssentialDownloadSizeRemaining: 0)
        let outcome = try ExtensionWindow(pluginPath: TestPlugins.swiftExample).run(
            [.contentRequest(.periodic, manifestPath: path, info: info)])
        #expect(outcome.returnedDownloads.map(\.identifier) == ["small"])
    }

    @Test func everyHostFunctionAnswersThroughTheTable() throws {
        let services = inMemoryServices()
        let failed = Download(
            identifier: "level-9", uniqueIdentifier: "BAURLDownload.g.1", url: "https://a.example.com/9",
            applicationGroupIdentifier: "g", fileSize: 10, isEssential: true)
        let outcome = try ExtensionWindow(pluginPath: try TestPlugins.c("probes/manager_calls")).run(
            [.downloadFailed(failed, HostError(code: -1001, domain: "NSURLErrorDomain", message: "timed out"))],
            services: services)
        #expect(outcome.stopReason == .returned)
        let lines = outcome.log.map(\.message)
        #expect(lines == [
            "schedule: ok",
            "schedule again: 100 a download with identifier 'level-9' is scheduled",
            "schedule NULL: 0 schedule_download: the download is NULL",
            "start foreground: 50 startForegroundDownload is for the app, not an extension",
            "fetch: 1: ok",
            "cancel: ok",
            "cancel again: 101 no download 'level-9' is scheduled",
        ])
        #expect(services.scheduled.isEmpty)
        #expect(outcome.refusedCalls.map(\.error.code) == [100, 50, 101])
    }

    @Test func exclusiveControlIsALockBetweenProcesses() throws {
        let lockPath = TestPlugins.scratch.appendingPathComponent("\(UUID().uuidString).lock").path
        let services = InMemoryHostServices(lockPath: lockPath) { _ in nil }
        let plugin = try TestPlugins.c("probes/exclusive_control")

        // The "app" (this test process) holds the lock: trying once fails at once, waiting fails at the timeout.
        let app = ExclusiveControlLock(path: lockPath)
        #expect(try app.tryAcquire().get())
        let once = try runContentRequest(plugin, manifest: "0", services: services)
        #expect(once.log.map(\.message) == ["refused: \(EWOULDBLOCK) NSPOSIXErrorDomain"])
        let waited = try runContentRequest(plugin, manifest: "300", services: services)
        #expect(waited.log.map(\.message) == ["refused: \(EWOULDBLOCK) NSPOSIXErrorDomain"])
        #expect(waited.elapsed >= .milliseconds(300))

        // Released: the extension gets it, and the window stays open while it holds it.
        app.release()
        let acquired = try runContentRequest(plugin, manifest: "0", services: services)
        #expect(acquired.log.map(\.message) == ["acquired"])
        #expect(acquired.stopReason == .returned)
        #expect(acquired.elapsed >= .milliseconds(200))
        // And the window gave it back when it ended.
        #expect(try app.tryAcquire().get())
        app.release()
    }

    /// Two completions in one window, each taking exclusive control with the closure form in its callback and
    /// returning at once: both handlers run, in order, before the window ends (in about half the runs one never
    /// ran, when the SDK asked for control only after the callback had returned).
    @Test func everyExclusiveControlHandlerRunsInOrderBeforeTheWindowEnds() throws {
        let plugin = TestPlugins.buildFolder.appendingPathComponent("libExclusiveHandlersProbe.so").path
        for _ in 0..<5 {
            var events: [WindowEvent] = []
            for identifier in ["first", "second"] {
                let file = try TestPlugins.file("contents", name: identifier)
                events.append(.downloadFinished(
                    Download(identifier: identifier, url: "https://a.example.com/\(identifier)",
                             applicationGroupIdentifier: "group.g", fileSize: 8),
                    filePath: file))
            }
            let outcome = try ExtensionWindow(pluginPath: plugin, limits: shortLimits).run(events, services: inMemoryServices())
            #expect(outcome.stopReason == .returned)
            #expect(outcome.log.map(\.message) == ["handler first: acquired", "handler second: acquired"])
        }
    }

    /// A window's events all go out at its hello, more than the socket's buffer holds when a delivery has many
    /// completions: the host keeps what the socket has no room for and sends it as the runner reads (it dropped
    /// them before, and such a window waited for its missing events until the budget ran out).
    @Test func aWindowWithMoreEventsThanTheSocketHoldsGetsThemAll() throws {
        let count = 2_000
        let events: [WindowEvent] = (1...count).map { index in
            .downloadFinished(
                Download(identifier: "file-\(index)", url: "https://a.example.com/\(index)",
                         applicationGroupIdentifier: "group.g", fileSize: 8),
                filePath: TestPlugins.scratch.appendingPathComponent("absent-\(index)").path)
        }
        let outcome = try ExtensionWindow(pluginPath: try TestPlugins.c("example_extension"), limits: shortLimits)
            .run(events, services: inMemoryServices())
        #expect(outcome.stopReason == .returned)
        #expect(outcome.completedEvents == count)
        #expect(outcome.log.count == count)
        #expect(outcome.log.last?.message == "file-\(count) finished, but there is nowhere to keep it")
    }

    /// A delivery's files lie in one folder, which the window's sandbox lets the extension write: named once, not
    /// once a file. A line a file made the variable that carries them past the kernel's limit for one (128 KiB)
    /// with a folder 600 bytes long, and the window never started (execve: E2BIG).
    @Test func aBatchOfFilesFromAFolderWithALongPathReachesTheExtension() throws {
        var folder = TestPlugins.scratch.appendingPathComponent("long-\(UUID().uuidString)")
        for part in 0..<3 { folder.appendPathComponent(String(repeating: "\(part)", count: 200)) }
        let container = TestPlugins.scratch.appendingPathComponent("container-\(UUID().uuidString)")
        for made in [folder, container] { try FileManager.default.createDirectory(at: made, withIntermediateDirectories: true) }
        #expect(folder.path.utf8.count > 600)
        let count = 256
        let events: [WindowEvent] = try (1...count).map { index in
            let file = folder.appendingPathComponent("file-\(index)")
            try Data("\(index)".utf8).write(to: file)
            return .downloadFinished(
                Download(identifier: "file-\(index)", url: "https://a.example.com/\(index)",
                         applicationGroupIdentifier: "group.g", fileSize: 8),
                filePath: file.path)
        }
        let appGroup = ExtensionWindow.AppGroup(identifier: "group.g", container: container.path)
        let outcome = try ExtensionWindow(
            pluginPath: try TestPlugins.c("example_extension"), limits: shortLimits, appGroup: appGroup
        ).run(events, services: inMemoryServices())
        #expect(outcome.stopReason == .returned)
        #expect(outcome.completedEvents == count)
        // The example extension keeps each file in its container: the sandbox let it take them from the folder.
        let kept = try FileManager.default.contentsOfDirectory(atPath: container.appendingPathComponent("Assets").path)
        #expect(Set(kept) == Set((1...count).map { "file-\($0)" }))
    }

    /// The host's table names the host, its release (the one `bahost --version` prints) and its ABI.
    @Test func theHostTableSaysWhichHostItIs() throws {
        let outcome = try runContentRequest(try TestPlugins.c("probes/host_identity"))
        #expect(outcome.log.map(\.message) == ["bahost \(BahostVersion.release) ABI \(BahostVersion.abi)"])
    }

    @Test func aNewerMinorVersionLoadsAndItsNewFieldsAreIgnored() throws {
        let outcome = try runContentRequest(try TestPlugins.c("probes/newer_minor"))
        #expect(outcome.stopReason == .returned)
        #expect(outcome.abiVersion == "1.9")
        #expect(outcome.returnedDownloads.map(\.identifier) == ["from-1.9"])
    }

    @Test func anOlderTableIsNotReadPastItsStructSize() throws {
        let outcome = try runContentRequest(try TestPlugins.c("probes/older_minor"), limits: shortLimits)
        // will_terminate lies past struct_size: absent, so the default (nothing) runs and returns at once.
        #expect(outcome.stopReason == .budgetExceeded(willTerminateReturned: true))
        #expect(outcome.log.isEmpty)
    }
}
