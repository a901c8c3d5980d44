import Foundation
import Testing
import TestSupport

/// `bahost pack` as an author uses it: a template, a package, a download manifest, and its refusals.
@Suite(.ownThreads) struct PackCommandTests {
    @Test func fromATemplateToADownloadManifest() throws {
        let root = TestPlugins.scratch.appendingPathComponent("pack-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: root.appendingPathComponent("textures/1"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("levels"), withIntermediateDirectories: true)
        try Data("{\"level\":1}".utf8).write(to: root.appendingPathComponent("levels/1.json"))
        try Data("sky".utf8).write(to: root.appendingPathComponent("textures/1/sky.ktx"))
        let manifest = root.appendingPathComponent("Manifest.json").path

        #expect(try Bahost.run(["pack", "template", "-o", manifest]).status == 0)
        let again = try Bahost.run(["pack", "template", "-o", manifest])
        #expect(again.status != 0 && again.stderr.contains("exists"), "\(again.stderr)")

        let packed = try Bahost.run(["pack", "package", manifest, "--json"])
        #expect(packed.status == 0, "\(packed.stderr)")
        let result = try packed.json()
        #expect(result["assetPackID"] as? String == "level-1")
        #expect(result["files"] as? Int == 2 && result["installedSize"] as? Int == 14)
        let archive = try #require(result["archive"] as? String)

        let output = root.appendingPathComponent("download-manifest.json").path
        let listed = try Bahost.run([
            "pack", "download-manifest", "create", archive, "--download-base-url", "https://cdn.example.com/packs",
            "--output-path", output,
        ])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("level-1 version 1: 2 files"), "\(listed.stdout)")
        let served = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: output))) as? [String: Any])
        let pack = try #require((served["assetPacks"] as? [[String: Any]])?.first)
        #expect(pack["url"] as? String == "https://cdn.example.com/packs/level-1")
        #expect(pack["version"] as? Int == 1)

        var text = try String(contentsOfFile: manifest, encoding: .utf8)
        text = text.replacingOccurrences(of: "level-1", with: "level_1")
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)
        let refused = try Bahost.run(["pack", "package", manifest])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("contains an underscore, which Apple refuses"), "\(refused.stderr)")
    }
}
