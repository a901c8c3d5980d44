import Foundation
import HostVocabulary

/// Where this machine's pairing lives: `pairing.pem` beside the settings file (so the service, which watches that
/// folder, takes a change at once), readable by its owner alone. It holds four PEM blocks: the household's authority
/// and its key (to pair more machines from this one), then this machine's certificate and key.
public struct PairingFile: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// Beside `settings`.
    public init(beside settings: SettingsFile) { path = "\(settings.folder)/pairing.pem" }

    /// The most bytes read: four PEM blocks of P-256 are under 3 KB.
    public static let maximumSize = 64 * 1024

    /// What the file holds.
    public struct Contents: Sendable, Hashable {
        public var pairing: PeerPairing
        public var authorityKey: String

        public init(pairing: PeerPairing, authorityKey: String) {
            self.pairing = pairing
            self.authorityKey = authorityKey
        }
    }

    /// The pairing, or nil when there is none; throws what is wrong with a file that is there.
    public func read() throws(SettingError) -> Contents? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path), data.count <= Self.maximumSize else {
            throw SettingError(key: "", "cannot be read, or is over \(Self.maximumSize) bytes", file: path)
        }
        let blocks = Self.pemBlocks(String(decoding: data, as: UTF8.self))
        guard blocks.count == 4, blocks[0].kind == "CERTIFICATE", blocks[1].kind.hasSuffix("PRIVATE KEY"),
            blocks[2].kind == "CERTIFICATE", blocks[3].kind.hasSuffix("PRIVATE KEY")
        else {
            throw SettingError(
                key: "", "must hold the authority's certificate and key, then this machine's (PEM); pair again with "
                    + "bahost peers pair", file: path)
        }
        return Contents(
            pairing: PeerPairing(authority: blocks[0].text, certificate: blocks[2].text, key: blocks[3].text),
            authorityKey: blocks[1].text)
    }

    /// Writes the pairing, whole, in one rename, readable by the owner alone.
    public func write(_ contents: Contents) throws(SettingError) {
        let text = contents.pairing.authority + contents.authorityKey + contents.pairing.certificate
            + contents.pairing.key
        try SettingsFile.replace(path, with: Data(text.utf8), mode: 0o600)
    }

    /// Removes the pairing; true when there was one.
    public func remove() -> Bool { unlink(path) == 0 }

    /// The PEM blocks of `text`, in order: each block's label and its whole text, its lines ending in "\n".
    public static func pemBlocks(_ text: String) -> [(kind: String, text: String)] {
        var blocks: [(String, String)] = []
        var kind: String?
        var lines: [Substring] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if kind == nil, trimmed.hasPrefix("-----BEGIN "), trimmed.hasSuffix("-----") {
                kind = String(trimmed.dropFirst(11).dropLast(5))
                lines = [Substring(trimmed)]
            } else if let open = kind {
                lines.append(Substring(trimmed))
                if trimmed == "-----END \(open)-----" {
                    blocks.append((open, lines.joined(separator: "\n") + "\n"))
                    kind = nil
                }
            }
        }
        return blocks
    }
}
