import CBAExtension
import Foundation
import Vocabulary

/// Host services that keep the downloads an extension schedules in memory, for one run: what `bahost run` and the
/// testing harness give a window. `validate` is the policy check (see the Policy module).
public final class InMemoryHostServices: ExtensionHostServices {
    /// Every download that counts as queued, in order: scheduled through the manager, or adopted.
    public var scheduled: [Download] { entries.compactMap { $0?.download } }
    /// Only those scheduled through the manager, in order.
    public var scheduledThroughManager: [Download] {
        entries.compactMap { $0.flatMap { $0.adopted ? nil : $0.download } }
    }
    /// Linear in the downloads, whatever their number: identifiers are looked up in a set, and a cancel leaves a
    /// hole rather than moving what follows.
    private var entries: [(download: Download, adopted: Bool)?] = []
    private var identifiers = Set<String>()
    private let validate: (Download) -> HostError?
    private let lock: ExclusiveControlLock

    public init(lockPath: String, validate: @escaping (Download) -> HostError?) {
        self.validate = validate
        lock = ExclusiveControlLock(path: lockPath)
    }

    /// Downloads that already count as queued (what the content request returned and was accepted), so that
    /// scheduling the same identifier again is refused with Apple's code 100.
    public func adopt(_ downloads: [Download]) {
        for download in downloads {
            identifiers.insert(download.identifier)
            entries.append((download.withUniqueIdentifier(), true))
        }
    }

    public func schedule(_ download: Download) -> Result<Void, HostError> {
        if let error = validate(download) { return .failure(error) }
        guard identifiers.insert(download.identifier).inserted else {
            return .failure(HostError(
                BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED,
                "a download with identifier '\(download.identifier.printable(limit: 200))' is scheduled"))
        }
        var queued = download.withUniqueIdentifier()
        queued.state = BA_DOWNLOAD_STATE_WAITING.rawValue
        entries.append((queued, false))
        return .success(())
    }

    public func cancel(_ download: Download) -> Result<Void, HostError> {
        let index = entries.firstIndex { entry in
            guard let candidate = entry?.download else { return false }
            return download.uniqueIdentifier.map { $0 == candidate.uniqueIdentifier }
                ?? (candidate.identifier == download.identifier)
        }
        guard let index, let entry = entries[index] else {
            return .failure(HostError(
                BA_ERROR_DOWNLOAD_NOT_SCHEDULED,
                "no download '\(download.identifier.printable(limit: 200))' is scheduled"))
        }
        identifiers.remove(entry.download.identifier)
        entries[index] = nil
        return .success(())
    }

    public func currentDownloads() -> Result<[Download], HostError> { .success(scheduled) }

    public func tryAcquireExclusiveControl() -> Result<Bool, HostError> { lock.tryAcquire() }

    public func releaseExclusiveControl() { lock.release() }
}
