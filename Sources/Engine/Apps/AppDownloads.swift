import CBAExtension
import ExtensionRuntime
import Foundation
import HostVocabulary
import Policy
import Queue
import Vocabulary

/// What an app's `BADownloadManager` reaches, from its extension's windows or from the app itself (through the
/// service): the durable queue, under the app's policy. A download of another app is not touched (55).
///
/// Thread rule: one caller at a time (a window's thread, or an app connection's).
public final class AppDownloads: ExtensionHostServices, @unchecked Sendable {  // safe: one caller at a time (above)
    private let appIdentifier: String
    private let store: QueueStore
    private let dataRoot: DataRoot
    private let observe: LifecycleObserver
    /// Hears of each download queued, promoted or cancelled.
    private let driver: EngineDriver
    /// Made at the first exclusive-control call: most callers never make one.
    private lazy var lock = ExclusiveControlLock(path: ExclusiveControlLock.path(
        forApp: appIdentifier, sandboxHome: dataRoot.sandboxHomes.home(ofApp: appIdentifier)))

    init(
        appIdentifier: String, store: QueueStore, dataRoot: DataRoot, observe: @escaping LifecycleObserver,
        driver: EngineDriver
    ) {
        self.appIdentifier = appIdentifier
        self.store = store
        self.dataRoot = dataRoot
        self.observe = observe
        self.driver = driver
    }

    public func schedule(_ download: Download) -> Result<Void, HostError> {
        enqueue(download, foreground: false)
    }

    /// Apple's startForegroundDownload(_:) for the app: promotes the download when it is queued (a running
    /// transfer carries on, a waiting one starts now), else queues it in the foreground.
    public func startForeground(_ download: Download) -> Result<Void, HostError> {
        if let refusal = foreignDownload(download) { return .failure(refusal) }
        do {
            if let promoted = try store.promote(
                appIdentifier: appIdentifier, uniqueIdentifier: nil, identifier: download.identifier)
            {
                observe(.promoted(promoted.status))
                driver.wakeNow()
                return .success(())
            }
        } catch {
            return .failure(Self.storeFailure(error))
        }
        return enqueue(download, foreground: true)
    }

    /// Queues one download, its URL as it will be fetched; the queue refuses another app's unique identifier (55)
    /// in the same transaction.
    private func enqueue(_ download: Download, foreground: Bool) -> Result<Void, HostError> {
        let download = DownloadValidation.normalized(download)
        do {
            let results = try store.enqueue(
                [download], for: appIdentifier, foreground: foreground, refusingForeign: true
            ) { app, download in
                var policy = app.policy
                let error = policy.admit(download, for: nil)
                app.take(policy)
                return error
            }
            switch results.first?.result {
            case .success(let queued)?:
                observe(.queued(queued.status))
                driver.queued(queued)
                return .success(())
            case .failure(let error)?:
                observe(.rejected(download, error))
                return .failure(error)
            case nil:
                return .success(())
            }
        } catch {
            return .failure(Self.storeFailure(error))
        }
    }

    public func cancel(_ download: Download) -> Result<Void, HostError> {
        if let refusal = foreignDownload(download) { return .failure(refusal) }
        do {
            guard let cancelled = try store.cancel(
                appIdentifier: appIdentifier, uniqueIdentifier: download.uniqueIdentifier,
                identifier: download.identifier)
            else {
                return .failure(HostError(
                    BA_ERROR_DOWNLOAD_NOT_SCHEDULED, "no download '\(download.identifier)' is scheduled"))
            }
            driver.stopTransfer(cancelled.uniqueIdentifier)
            return .success(())
        } catch {
            return .failure(Self.storeFailure(error))
        }
    }

    public func currentDownloads() -> Result<[Download], HostError> {
        do {
            return .success(try store.currentDownloads(for: appIdentifier))
        } catch {
            return .failure(Self.storeFailure(error))
        }
    }

    /// `currentDownloads` read in place, each with its place in the queue, in no particular order
    /// (`QueueStore.forEachCurrentDownload`): for a reply written without a `Download` of each.
    public func forEachCurrentDownload(_ body: (_ queuePosition: Int64, DownloadInPlace) -> Void) -> HostError? {
        do {
            try store.forEachCurrentDownload(for: appIdentifier, body)
            return nil
        } catch {
            return Self.storeFailure(error)
        }
    }

    public func tryAcquireExclusiveControl() -> Result<Bool, HostError> { lock.tryAcquire() }

    public func releaseExclusiveControl() { lock.release() }

    /// 55 for a download that another app's queue holds under this unique identifier.
    private func foreignDownload(_ download: Download) -> HostError? {
        guard let uniqueIdentifier = download.uniqueIdentifier,
            let owner = try? store.owner(ofUniqueIdentifier: uniqueIdentifier), owner != appIdentifier
        else { return nil }
        return QueueStore.belongsToAnotherApp(download)
    }

    private static func storeFailure(_ error: Error) -> HostError {
        HostError(BA_ERROR_CALLER_CONNECTION_INVALID, "the download queue failed: \(error)")
    }
}
