import CBAExtension
import Foundation
import Vocabulary

/// Host services that keep the downloads an extension schedules in memory, for one run: what `bahost run` and the
/// testing harness give a window. `validate` is the policy check (see the Policy module).
public final class InMemoryHostServices: ExtensionHostServices {
    /// Downloads scheduled through the manager, in order.
    public private(set) var scheduled: [Download] = []
    private let validate: (Download) -> HostError?
    private let lock: ExclusiveControlLock

    public init(lockPath: String, validate: @escaping (Download) -> HostError?) {
        self.validate = validate
        lock = ExclusiveControlLock(path: lockPath)
    }

    /// Downloads that already count as queued (what the content request returned and was accepted), so that
    /// scheduling the same identifier again is refused with Apple's code 100.
    public func adopt(_ downloads: [Download]) {
        scheduled += downloads.map { $0.withUniqueIdentifier() }
    }

    public func schedule(_ download: Download) -> Result<Void, HostError> {
        if let error = validate(download) { return .failure(error) }
        guard !scheduled.contains(where: { $0.identifier == download.identifier }) else {
            return .failure(HostError(
                BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED, "a download with identifier '\(download.identifier)' is scheduled"))
        }
        var queued = download.withUniqueIdentifier()
        queued.state = BA_DOWNLOAD_STATE_WAITING.rawValue
        scheduled.append(queued)
        return .success(())
    }

    public func cancel(_ download: Download) -> Result<Void, HostError> {
        let index = scheduled.firstIndex { candidate in
            download.uniqueIdentifier.map { $0 == candidate.uniqueIdentifier } ?? (candidate.identifier == download.identifier)
        }
        guard let index else {
            return .failure(HostError(
                BA_ERROR_DOWNLOAD_NOT_SCHEDULED, "no download '\(download.identifier)' is scheduled"))
        }
        scheduled.remove(at: index)
        return .success(())
    }

    public func currentDownloads() -> Result<[Download], HostError> { .success(scheduled) }

    public func tryAcquireExclusiveControl() -> Result<Bool, HostError> { lock.tryAcquire() }

    public func releaseExclusiveControl() { lock.release() }
}
