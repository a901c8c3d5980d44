import CArchive
import Crypto
import Foundation
import Testing
import TestSupport
@testable import Packs

/// Archives made by hand to break the rules: each is refused as it is unpacked, and leaves nothing behind.
@Suite(.ownThreads) struct HostileArchiveTests {
    func folder() -> URL { TestPlugins.freshFolder("packs") }

    /// One entry of a hand-made archive.
    struct Entry {
        var path: String
        var data: Data = Data("x".utf8)
        /// The size the header claims; the data's by default.
        var declaredSize: Int64?
        var symlink: String?
    }

    /// Writes `entries` after an index of `files` (by default, what the entries really hold).
    func craft(_ entries: [Entry], files: [PackFile]? = nil) -> (String, PackIndex) {
        let files = files ?? entries.map {
            PackFile(path: $0.path, size: Int64($0.data.count), sha256: SHA256.hash(data: $0.data).map { String(format: "%02x", $0) }.joined())
        }
        let index = PackIndex(
            manifest: PackManifest(assetPackID: "evil", downloadPolicy: .onDemand, fileSelectors: [.file("x")]),
            files: files)
        let path = folder().appendingPathComponent("evil.tar.zst").path
        let archive = archive_write_new()!
        archive_write_set_format_pax_restricted(archive)
        archive_write_add_filter_zstd(archive)
        archive_write_open_filename(archive, path)
        func add(_ name: String, _ data: Data, size: Int64, symlink: String? = nil) {
            let entry = archive_entry_new()!
            archive_entry_set_pathname_utf8(entry, name)
            if let symlink {
                archive_entry_set_filetype(entry, 0o120000)
                archive_entry_set_symlink_utf8(entry, symlink)
                archive_entry_set_size(entry, 0)
            } else {
                archive_entry_set_filetype(entry, 0o100000)
                archive_entry_set_size(entry, size)
            }
            archive_entry_set_perm(entry, 0o644)
            archive_write_header(archive, entry)
            if symlink == nil { _ = data.withUnsafeBytes { archive_write_data(archive, $0.baseAddress, $0.count) } }
            archive_entry_free(entry)
        }
        add(PackArchive.indexPath, try! JSONEncoder().encode(index), size: Int64(try! JSONEncoder().encode(index).count))
        for entry in entries {
            add(entry.path, entry.data, size: entry.declaredSize ?? Int64(entry.data.count), symlink: entry.symlink)
        }
        archive_write_close(archive)
        archive_write_free(archive)
        return (path, index)
    }

    /// Unpacking fails with an error containing `expected`, and nothing lands beside the staging folder.
    func refuses(_ archive: (String, PackIndex), expected index: PackIndex? = nil, _ expected: String) {
        let parent = folder()
        let staging = parent.appendingPathComponent("staging")
        #expect {
            try PackArchive.extract(archive.0, expected: index ?? archive.1, into: staging)
        } throws: { error in
            "\(error)".contains(expected)
        }
        // The staging folder is all there is (it may not have been made at all).
        #expect(Set((try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? []).isSubset(of: ["staging"]))
        #expect(!FileManager.default.fileExists(atPath: "/tmp/escape"))
    }

    @Test func pathsLeavingThePackAreRefused() {
        refuses(craft([Entry(path: "../escape")]), "has a '..' component")
        refuses(craft([Entry(path: "a/../../escape")]), "has a '..' component")
        refuses(craft([Entry(path: "/tmp/escape")]), "leaves the pack")
        refuses(craft([Entry(path: "a//b")]), "has a '' component")
        refuses(craft([Entry(path: "a\nb")]), "control character")
        refuses(craft([Entry(path: ".bapack/index.json")]), "archive's own")
    }

    @Test func linksAreRefused() {
        let link = Entry(path: "escape", symlink: "/etc")
        let files = [PackFile(path: "escape", size: 0, sha256: String(repeating: "0", count: 64))]
        refuses(craft([link], files: files), "a link or a special file")
    }

    @Test func moreBytesThanDeclaredAreRefused() {
        // The index says 1 byte; the archive carries a million of zeros (a bomb once compressed).
        let bomb = Data(count: 1 << 20)
        let files = [PackFile(path: "big", size: 1, sha256: String(repeating: "0", count: 64))]
        refuses(craft([Entry(path: "big", data: bomb)], files: files), "not the 1 declared")
    }

    @Test func aFileThatIsNotWhatTheIndexSaysIsRefused() {
        let files = [PackFile(path: "a", size: 1, sha256: String(repeating: "0", count: 64))]
        refuses(craft([Entry(path: "a")], files: files), "has SHA-256")
        let once = craft([Entry(path: "a")]).1.files
        refuses(craft([Entry(path: "a"), Entry(path: "a")], files: once), "appears twice")
        let (path, index) = craft([Entry(path: "a")])
        var promised = index
        promised.files.append(PackFile(path: "b", size: 1, sha256: String(repeating: "0", count: 64)))
        refuses((path, index), expected: promised, "lists other files than its download manifest")
    }

    @Test func aCorruptArchiveIsRefused() throws {
        let (path, index) = craft([Entry(path: "a", data: Data(repeating: 7, count: 100_000))])
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: path))
        refuses((path, index), "corrupt pack archive")
        try Data("not an archive at all".utf8).write(to: URL(fileURLWithPath: path))
        refuses((path, index), "corrupt pack archive")
    }
}
