import CBAExtension
import ExtensionRuntime
import Foundation
import Policy
import Queue

/// What an app's extension windows reach through `BADownloadManager`: the durable queue, under the app's policy.
/// Unchecked Sendable: it is handed to the window's thread, the only thread that then calls it.
final class QueueHostServices: ExtensionHostServices, @unchecked Sendable {
    private let engine: HostEngine
    private let appIdentifier: String
    private let lock: ExclusiveControlLock

    init(engine: HostEngine, appIdentifier: String) {
        self.engine = engine
        self.appIdentifier = appIdentifier
        lock = ExclusiveControlLock(path: ExclusiveControlLock.path(forApp: appIdentifier))
    }

    func schedule(_ download: ExtensionDownload) -> Result<Void, HostError> {
        do {
            let results = try engine.store.enqueue([download], for: appIdentifier) { app, download in
                var policy = app.policy
                let error = policy.admit(download, for: nil)
                app.take(policy)
                return error
            }
            switch results.first?.result {
            case .success(let queued)?:
                engine.observe(.queued(queued))
                engine.wake()
                return .success(())
            case .failure(let error)?:
                engine.observe(.rejected(download, error))
                return .failure(error)
            case nil:
                return .success(())
            }
        } catch {
            return .failure(Self.storeFailure(error))
        }
    }

    func cancel(_ download: ExtensionDownload) -> Result<Void, HostError> {
        do {
            guard let cancelled = try engine.store.cancel(
                appIdentifier: appIdentifier, uniqueIdentifier: download.uniqueIdentifier,
                identifier: download.identifier)
            else {
                return .failure(HostError(
                    BA_ERROR_DOWNLOAD_NOT_SCHEDULED, "no download '\(download.identifier)' is scheduled"))
            }
            engine.stopTransfer(cancelled.uniqueIdentifier)
            return .success(())
        } catch {
            return .failure(Self.storeFailure(error))
        }
    }

    func currentDownloads() -> Result<[ExtensionDownload], HostError> {
        do {
            return .success(try engine.store.activeDownloads(for: appIdentifier).map(\.described))
        } catch {
            return .failure(Self.storeFailure(error))
        }
    }

    func tryAcquireExclusiveControl() -> Result<Bool, HostError> { lock.tryAcquire() }

    func releaseExclusiveControl() { lock.release() }

    private static func storeFailure(_ error: Error) -> HostError {
        HostError(BA_ERROR_CALLER_CONNECTION_INVALID, "the download queue failed: \(error)")
    }
}
