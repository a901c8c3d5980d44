import Foundation
import PackAuthoring
import Packs

/// Asset packs the tests make.
public enum TestPacks {
    /// An on-demand pack `id` holding one file of `size` random bytes (`ID/blob.bin`, incompressible, so that its
    /// archive is as large as the file), packaged in `folder`; returns the archive's path.
    public static func randomBlob(_ id: String, size: Int, in folder: URL) throws -> String {
        try FileManager.default.createDirectory(at: folder.appendingPathComponent(id), withIntermediateDirectories: true)
        try Data.random(count: size).write(to: folder.appendingPathComponent("\(id)/blob.bin"))
        try Data("{\"assetPackID\":\"\(id)\",\"downloadPolicy\":{\"onDemand\":{}},\"fileSelectors\":[{\"directory\":\"\(id)\"}]}".utf8)
            .write(to: folder.appendingPathComponent("Manifest.json"))
        let archive = folder.appendingPathComponent("\(id).tar.zst").path
        try PackArchive.package(manifestPath: folder.appendingPathComponent("Manifest.json").path, output: archive)
        return archive
    }
}
