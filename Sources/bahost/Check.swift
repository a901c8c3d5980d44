import ArgumentParser
import BackgroundAssetsTesting
import Foundation
import Vocabulary

/// `bahost check`: `BackgroundAssetsTesting`'s budget assertion as a command, so that an extension written in C (or
/// any language without Swift tests) asserts its runtime budget in `make test` as a Swift extension does in
/// `swift test`. It runs the extension exactly as the harness and the service do: its own process, its window's
/// budget, the same stop reasons.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Assert that an extension answers within a runtime budget (BackgroundAssetsTesting as a command).",
        discussion: """
            Sends one content request (or, with --asset-pack, asks shouldDownload about one pack) in a window of \
            --budget seconds and fails unless the extension returned within --within seconds with every download \
            it returned valid. Nothing is downloaded.

            Exit status: 0 within the budget; 1 not (each problem is printed, then the extension's log); 64 bad \
            arguments.
            """)

    @Option(help: "The extension: a shared object exporting ba_extension_entry.")
    var plugin: String

    @Option(help: "The content request: install, update, periodic or language-change.")
    var event = "install"

    @Option(help: "The manifest file to hand the extension (default: a manifest with no assets).")
    var manifest: String?

    @Option(help: "The app group the extension's downloads must name; its container is a scratch folder.")
    var appGroup: String?

    @Option(help: "Instead of a content request, ask a managed extension whether to download this asset pack.")
    var assetPack: String?

    @Option(help: "The window's budget in seconds: the extension is stopped there, as the service would.")
    var budget: Double = WindowLimits.default.budget.inSeconds

    @Option(help: "The extension must return within this many seconds (default: the budget).")
    var within: Double?

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    func validate() throws {
        guard ContentRequest(name: event) != nil else {
            throw ValidationError("--event must be one of: \(ContentRequest.allCases.map(\.name).joined(separator: ", "))")
        }
        guard budget > 0, budget <= 3600 else { throw ValidationError("--budget must be in (0, 3600] seconds") }
        guard (within ?? budget) > 0 else { throw ValidationError("--within must be positive") }
        guard FileManager.default.fileExists(atPath: plugin) else { throw ValidationError("no extension at \(plugin)") }
        if let manifest, !FileManager.default.isReadableFile(atPath: manifest) {
            throw ValidationError("cannot read the manifest \(manifest)")
        }
    }

    func run() throws {
        let harness = ExtensionHarness(
            plugin: plugin, budget: .milliseconds(Int64(budget * 1000)), appGroupIdentifier: appGroup)
        let result: HarnessRun
        if let assetPack {
            result = try harness.shouldDownload(AssetPackInfo(id: assetPack, version: 1, downloadSize: 0, userInfo: nil))
        } else {
            let contents = try manifest.map { try Data(contentsOf: URL(fileURLWithPath: $0)) } ?? Data(#"{"assets": []}"#.utf8)
            result = try harness.contentRequest(ContentRequest(name: event)!, manifest: contents)
        }
        let limit = within ?? budget
        var problems: [String] = []
        do {
            try result.requireReturned(within: .milliseconds(Int64(limit * 1000)))
        } catch let violation as BudgetViolation {
            problems = violation.problems
        }
        let milliseconds = result.elapsed.inSeconds * 1000
        if json {
            var object: [String: Any] = [
                "ok": problems.isEmpty, "elapsedMilliseconds": milliseconds, "withinSeconds": limit,
                "stopReason": result.stopReason.summary, "problems": problems.map { $0.printable() },
                "downloads": result.downloads.map { $0.identifier.printable() }, "log": result.log.map { $0.printable() },
            ]
            if assetPack != nil { object["shouldDownload"] = result.assetPackAnswer ?? NSNull() }
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else if problems.isEmpty {
            var text = String(format: "returned in %.1f ms, within %.3g s", milliseconds, limit)
            if assetPack != nil {
                text += "; shouldDownload: \(result.assetPackAnswer.map { $0 ? "true" : "false" } ?? "no answer (downloads)")"
            } else {
                let names = result.downloads.map { $0.identifier.printable() }
                text += "; \(names.count) download\(names.count == 1 ? "" : "s")"
                if !names.isEmpty { text += ": " + names.joined(separator: ", ") }
            }
            print(text)
        } else {
            for problem in problems { print("✗ \(problem.printable())") }
            if !result.log.isEmpty { print("log:\n" + result.log.map { "  \($0.printable())" }.joined(separator: "\n")) }
        }
        if !problems.isEmpty { throw ExitCode.failure }
    }
}
