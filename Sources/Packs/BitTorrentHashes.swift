import Foundation

/// What names a file for BitTorrent v2 (BEP 52), as a download manifest carries it beside the file's SHA-256: its
/// pieces root, and the hash of each piece. A manifest fetched over TLS is the only source trusted for them; with
/// them machines on one network can share the file, each piece checked on its own whoever sent it
/// (docs/performance/DECISIONS.md #59).
public struct BitTorrentHashes: Sendable, Hashable, Codable {
    /// The SHA-256 Merkle root over the file's 16 KiB blocks (zero hashes padding the leaves to a power of two), in
    /// lowercase hex.
    public var piecesRoot: String
    /// The bytes a piece covers: a power of two, 16 KiB or more (`pieceLength(forSize:)`).
    public var pieceLength: Int64
    /// Each piece's subtree root, 32 bytes a piece, in base64; nil for a file of one piece, which BEP 52 gives no
    /// layer. Without it a piece could only be checked once the whole file is in, and libtorrent cannot tell which
    /// piece a lying source sent.
    public var pieceLayer: String?

    public init(piecesRoot: String, pieceLength: Int64, pieceLayer: String?) {
        self.piecesRoot = piecesRoot
        self.pieceLength = pieceLength
        self.pieceLayer = pieceLayer
    }

    /// The most pieces a file is cut into: its layer then stays within 32 KiB (43 KiB in base64), whatever its size.
    public static let maximumPieces: Int64 = 1024
    /// The most pieces read from a manifest another tool made, with pieces smaller than bahost's: a 2 MiB layer.
    static let maximumPiecesRead: Int64 = 65_536

    /// The piece length for a file of `size` bytes: the smallest power of two, from 16 KiB, that cuts it into at
    /// most `maximumPieces` pieces.
    public static func pieceLength(forSize size: Int64) -> Int64 {
        var length: Int64 = 16 << 10
        while (size + length - 1) / length > maximumPieces { length *= 2 }
        return length
    }

    /// Whether `text` is a SHA-256 digest as the manifest writes one: 64 lowercase hex digits.
    static func isHexDigest(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Checks the hashes' shape against the file's `size`.
    func validate(size: Int64, pack: String) throws(PackError) {
        func refuse(_ why: String) -> PackError { .invalidManifest("the pack '\(pack)''s BitTorrent hashes: \(why)") }
        guard Self.isHexDigest(piecesRoot) else {
            throw refuse("the pieces root is not 64 lowercase hex digits")
        }
        guard pieceLength >= 16 << 10, pieceLength & (pieceLength - 1) == 0, pieceLength <= 1 << 30 else {
            throw refuse("the piece length \(pieceLength) is not a power of two from 16 KiB to 1 GiB")
        }
        let pieces = (size + pieceLength - 1) / pieceLength
        guard pieces <= Self.maximumPiecesRead else {
            throw refuse("\(pieces) pieces, more than the \(Self.maximumPiecesRead) bahost reads")
        }
        if pieces <= 1 {
            guard pieceLayer == nil else { throw refuse("a file of one piece has no piece layer") }
            return
        }
        guard let pieceLayer, let layer = Data(base64Encoded: pieceLayer), layer.count == 32 * pieces else {
            throw refuse("the piece layer must hold 32 bytes for each of the \(pieces) pieces, in base64")
        }
    }
}
