import Foundation
import Packs
import Queue
import Synchronization
import Transfer

/// A managed pack's archive unpacked into the pack's staging area while it downloads, as long work of the blocking
/// pool (it holds a thread for as long as the download lasts), so that installing it once it is whole only syncs
/// and swaps. The transfer of the archive starts it and says how it ended (`finish`, `abandon`); the pack's
/// installation takes what it unpacked (`staged`) only when it read exactly the archive the transfer verified, and
/// otherwise unpacks the archive file as before. A kill leaves its folder in the staging area, which the next start
/// removes.
final class StreamedUnpack: Sendable {
    private let archive: GrowingArchive
    private let result = Mutex<Result<URL, PackError>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Starts unpacking the archive being written at `partialPath` into `store`'s staging area, on `pool`.
    init(partialPath: String, entry: DownloadManifest.Entry, store: PackStore, on pool: BlockingPool) throws(PackError) {
        let archive = try GrowingArchive(path: partialPath)
        self.archive = archive
        pool.execute {
            let unpacked = Result { () throws(PackError) -> URL in
                let folder = try store.unpack(archive, entry: entry)
                // What follows the archive's last entry (its end blocks, the end of the compressed frame) is read
                // too, so that `readWhole` can say the whole verified archive was read.
                archive.drain()
                return folder
            }
            self.result.withLock { $0 = unpacked }
            self.done.signal()
        }
    }

    /// The transfer ended with the whole archive, verified.
    func finish(length: Int64) { archive.finish(length: length) }

    /// The transfer ended without the archive (or started it again): the unpacking stops and its folder goes.
    func abandon() {
        archive.abandon()
        if case .success(let folder)? = wait() { try? FileManager.default.removeItem(at: folder) }
    }

    /// Waits for the unpacking; its folder when it unpacked exactly the verified archive, else nil (its folder then
    /// removed, and the archive is to be unpacked from its file).
    func staged() -> URL? {
        switch wait() {
        case .success(let folder) where archive.readWhole:
            return folder
        case .success(let folder):
            try? FileManager.default.removeItem(at: folder)
            return nil
        case .failure, nil:
            return nil
        }
    }

    private func wait() -> Result<URL, PackError>? {
        done.wait()
        done.signal()  // for a later wait
        return result.withLock { $0 }
    }
}

/// The unpackings under way or done, by download, until the pack's installation takes them.
final class StreamedUnpacks: Sendable {
    private let unpacks = Mutex<[String: StreamedUnpack]>([:])

    /// Starts one for a transfer of a whole pack archive; an earlier one of the same download is abandoned.
    func start(_ uniqueIdentifier: String, _ unpack: StreamedUnpack) {
        unpacks.withLock { $0.updateValue(unpack, forKey: uniqueIdentifier) }?.abandon()
    }

    /// The transfer of a download ended with its whole archive.
    func finished(_ uniqueIdentifier: String, length: Int64) {
        unpacks.withLock { $0[uniqueIdentifier] }?.finish(length: length)
    }

    /// Takes the one of a download, for its installation.
    func take(_ uniqueIdentifier: String) -> StreamedUnpack? {
        unpacks.withLock { $0.removeValue(forKey: uniqueIdentifier) }
    }
}
