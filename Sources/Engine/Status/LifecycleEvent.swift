import ExtensionRuntime
import Foundation
import Vocabulary

/// Why a window was opened.
public enum WindowPurpose: Sendable {
    case contentRequest(ContentRequest)
    /// Delivering this many completions.
    case completions(Int)
    /// Asking a managed extension about this many asset packs (`shouldDownload(_:)`).
    case assetPackQuestions(Int)
    /// Asking the extension to answer a server's challenge for one download, no app delegate having answered it.
    case challenge(identifier: String)

    /// What the window was for, in words (its identifiers escaped).
    public var name: String {
        switch self {
        case .contentRequest(let request): "\(request.name) content request"
        case .completions(let count): "delivery of \(count) completion\(count == 1 ? "" : "s")"
        case .assetPackQuestions(let count): "shouldDownload for \(count) asset pack\(count == 1 ? "" : "s")"
        case .challenge(let identifier): "authentication challenge for \(identifier.printable())"
        }
    }
}

/// Everything the host does for an app, as it happens, for progress displays and `--json` event lines.
public enum LifecycleEvent: Sendable {
    case manifestFetched(bytes: Int64)
    /// The manifest's server failed transiently; the host tries again after `retryIn`.
    case manifestWaiting(HostError, retryIn: Duration)
    case manifestFailed(HostError)
    case window(WindowPurpose, WindowOutcome, appIdentifier: String)
    /// A download the extension returned or scheduled that policy refused before any byte was fetched.
    case rejected(Download, HostError)
    case queued(DownloadStatus)
    /// A content request queued more downloads than a line each would serve a person or a script (more than
    /// `ContentRequestRunner.eventPerDownloadLimit`): one event for them all. `bahost debug downloads` lists them.
    case queuedMany(appIdentifier: String, count: Int, bytes: Int64, essential: Int)
    /// The app started the download in the foreground, or promoted it there.
    case promoted(DownloadStatus)
    case began(DownloadStatus, resumingAt: Int64)
    case progress(DownloadStatus, received: Int64, expected: Int64)
    /// Waiting to try again: for the network to come back, or after a transient failure.
    case paused(DownloadStatus, waitingForNetwork: Bool, until: Date, error: HostError)
    case finished(DownloadStatus)
    /// A pack's archive went through the swarm: what came from peers and from the CDN, and why it fell back to
    /// HTTP when it did (nil: the swarm made it whole).
    case peers(DownloadStatus, PeerFigures, fellBack: String?)
    case failed(DownloadStatus, HostError)
    /// Delivered to the extension, in a window.
    case delivered(DownloadStatus)
    /// Delivered to the running app's delegate.
    case deliveredToApp(DownloadStatus)
    /// A completion whose entry point never returned, given up after its attempts.
    case abandoned(DownloadStatus)
    /// A managed app's pack was installed (or updated) whole.
    case packInstalled(appIdentifier: String, id: String, version: Int)
    /// A managed app's extension vetoed the automatic download of a pack.
    case packVetoed(appIdentifier: String, id: String)
    /// A managed app's pack could not be downloaded or installed; what was installed before stays.
    case packFailed(appIdentifier: String, id: String, error: HostError)
    /// Every essential download of the app has ended: it may launch.
    case appMayLaunch(appIdentifier: String)
    /// The queue could not record something; the download stays as it was, to be resumed.
    case queueFailed(String)
    /// A delivery to the app failed (the queue, the disk, the container's folder): its completions stay pending and
    /// are delivered again after `retryIn` (nil: a run's last try, after which it leaves them pending).
    case deliveryFailed(appIdentifier: String, String, retryIn: Duration?)
    /// A run stopped waiting for the app's completions, whose deliveries kept failing: `count` stay pending, for
    /// `bahost resume` or the service.
    case deliveriesLeftPending(appIdentifier: String, count: Int, String)
}

public typealias LifecycleObserver = @Sendable (LifecycleEvent) -> Void
