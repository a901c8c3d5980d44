import Crypto
import Foundation
@testable import PackAuthoring
@testable import Packs
import Testing
import TestSupport

/// A file's BitTorrent v2 hashes as libtorrent makes them (`BitTorrentHashing`), against BEP 52's definition written
/// out here: SHA-256 of each 16 KiB block; a piece's hash the Merkle root of its blocks, zero hashes padding the last
/// piece; the pieces root the Merkle root of all blocks, zero hashes padding them to a power of two.
@Suite(.ownThreads) struct BitTorrentHashingTests {
    static let block = 16 << 10

    static func merkle(_ leaves: [Data], width: Int) -> Data {
        var layer = leaves + Array(repeating: Data(count: 32), count: width - leaves.count)
        while layer.count > 1 {
            layer = stride(from: 0, to: layer.count, by: 2).map { Data(SHA256.hash(data: layer[$0] + layer[$0 + 1])) }
        }
        return layer[0]
    }

    static func leaves(_ data: Data) -> [Data] {
        stride(from: 0, to: data.count, by: block).map { start in
            Data(SHA256.hash(data: data[start..<min(start + block, data.count)]))
        }
    }

    static func root(_ data: Data) -> String {
        let leaves = leaves(data)
        var width = 1
        while width < leaves.count { width *= 2 }
        return merkle(leaves, width: width).map { String(format: "%02x", $0) }.joined()
    }

    static func layer(_ data: Data, pieceLength: Int) -> Data {
        let perPiece = pieceLength / block
        let leaves = leaves(data)
        return stride(from: 0, to: leaves.count, by: perPiece).reduce(into: Data()) { layer, start in
            layer += merkle(Array(leaves[start..<min(start + perPiece, leaves.count)]), width: perPiece)
        }
    }

    static func random(_ size: Int) throws -> Data {
        try #require(FileHandle(forReadingAtPath: "/dev/urandom")).readData(ofLength: size)
    }

    func file(_ size: Int) throws -> (String, Data) {
        let data = try Self.random(size)
        let url = TestPlugins.freshFolder("bittorrent-hashes").appendingPathComponent("file.bin")
        try data.write(to: url)
        return (url.path, data)
    }

    /// One block; several, the last short; one whole piece; more than a piece; more than `maximumPieces` of the
    /// smallest piece length (so a longer one): libtorrent's root and layer are BEP 52's each time.
    @Test(arguments: [1, (40 << 10) + 7, 16 << 10, (5 << 20) + 123, (17 << 20) + 1])
    func libtorrentsHashesAreBEP52s(size: Int) throws {
        let (path, data) = try file(size)
        let hashes = try BitTorrentHashing.hashes(of: path, size: Int64(size))
        #expect(hashes.pieceLength == BitTorrentHashes.pieceLength(forSize: Int64(size)))
        #expect(hashes.piecesRoot == Self.root(data))
        if Int64(size) <= hashes.pieceLength {
            #expect(hashes.pieceLayer == nil)
        } else {
            #expect(hashes.pieceLayer == Self.layer(data, pieceLength: Int(hashes.pieceLength)).base64EncodedString())
        }
        try hashes.validate(size: Int64(size), pack: "p")
    }

    @Test func aFileOfOneBlockHasItsSHA256AsItsRoot() throws {
        let (path, data) = try file(1000)
        #expect(try BitTorrentHashing.hashes(of: path, size: 1000).piecesRoot
            == SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined())
    }

    @Test func thePieceLengthKeepsTheLayerSmall() {
        #expect(BitTorrentHashes.pieceLength(forSize: 64 << 10) == 16 << 10)
        #expect(BitTorrentHashes.pieceLength(forSize: 16 << 20) == 16 << 10)
        #expect(BitTorrentHashes.pieceLength(forSize: (16 << 20) + 1) == 32 << 10)
        #expect(BitTorrentHashes.pieceLength(forSize: 1 << 30) == 1 << 20)
    }

    @Test func anEmptyOrMissingFileHasNoHashesAndSaysWhy() throws {
        let (path, _) = try file(0)
        #expect { try BitTorrentHashing.hashes(of: path, size: 0) } throws: {
            "\($0)".contains("an empty file has no pieces root")
        }
        #expect { try BitTorrentHashing.hashes(of: path + ".missing", size: 1) } throws: {
            "\($0)".contains("hashes of \(path).missing")
        }
    }

    /// `bahost pack download-manifest create` records each archive's hashes; a served manifest whose hashes do not
    /// fit the archive is refused, naming the pack and what is wrong.
    @Test func theDownloadManifestCarriesEachArchivesHashes() throws {
        let folder = TestPlugins.freshFolder("bittorrent-manifest")
        try Self.random(100 << 10).write(to: folder.appendingPathComponent("level.bin"))
        let source = #"""
            {"assetPackID": "level-1", "downloadPolicy": {"onDemand":{}}, "fileSelectors": [{"file": "level.bin"}],
             "platforms": []}
            """#
        try Data(source.utf8).write(to: folder.appendingPathComponent("Manifest.json"))
        let archive = folder.appendingPathComponent("level-1.tar.zst").path
        try PackArchive.package(manifestPath: folder.appendingPathComponent("Manifest.json").path, output: archive)
        let manifest = try DownloadManifest.create(
            archives: [archive], baseURL: "https://cdn.example.com", previous: nil)
        let hashes = try #require(manifest.assetPacks[0].bittorrent)
        let data = try Data(contentsOf: URL(fileURLWithPath: archive))
        #expect(hashes.piecesRoot == Self.root(data))
        #expect(try DownloadManifest(data: manifest.encoded()) == manifest)

        func refused(_ change: (inout BitTorrentHashes) -> Void, _ reason: String) throws {
            var changed = manifest
            change(&changed.assetPacks[0].bittorrent!)
            #expect { try DownloadManifest(data: changed.encoded()) } throws: {
                "\($0)".contains("the pack 'level-1''s BitTorrent hashes: \(reason)")
            }
        }
        try refused({ $0.piecesRoot = String(repeating: "G", count: 64) }, "the pieces root is not 64 lowercase hex")
        try refused({ $0.pieceLength = 3 << 10 }, "the piece length 3072 is not a power of two")
        #expect(data.count > Int(hashes.pieceLength))
        try refused({ $0.pieceLayer = Data(count: 32).base64EncodedString() }, "the piece layer must hold 32 bytes")
        try refused({ $0.pieceLayer = nil }, "the piece layer must hold 32 bytes")
        let onePiece = BitTorrentHashes(
            piecesRoot: String(repeating: "0", count: 64), pieceLength: 16 << 10,
            pieceLayer: Data(count: 32).base64EncodedString())
        #expect { try onePiece.validate(size: 100, pack: "p") } throws: {
            "\($0)".contains("a file of one piece has no piece layer")
        }
        #expect { try onePiece.validate(size: 2 << 30, pack: "p") } throws: {
            "\($0)".contains("131072 pieces, more than the 65536 bahost reads")
        }
    }
}
