import CTorrent
import Foundation
import Packs
import Vocabulary

/// A file's BitTorrent v2 hashes, made by libtorrent as for a v2 torrent of the file alone (`BitTorrentHashes`).
enum BitTorrentHashing {
    /// The hashes of the file at `path`, which holds `size` bytes, with bahost's piece length for that size.
    static func hashes(of path: String, size: Int64) throws(PackError) -> BitTorrentHashes {
        let pieceLength = BitTorrentHashes.pieceLength(forSize: size)
        let pieces = Int((size + pieceLength - 1) / pieceLength)
        var root = [UInt8](repeating: 0, count: 32)
        var layer = [UInt8](repeating: 0, count: 32 * max(pieces, 1))
        var written = 0
        var error = [CChar](repeating: 0, count: 512)
        let result = bahost_torrent_hash_file(
            path, pieceLength, &root, &layer, layer.count, &written, &error, error.count)
        guard result == 0 else {
            let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw .io("cannot compute the BitTorrent v2 hashes of \(path): \(reason)")
        }
        return BitTorrentHashes(
            piecesRoot: root.lowercaseHex, pieceLength: pieceLength,
            pieceLayer: written == 0 ? nil : Data(layer[..<written]).base64EncodedString())
    }
}
