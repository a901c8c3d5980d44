import ExtensionRuntime
import Foundation
import HostVocabulary
import Policy
import Queue
import Transfer
import Vocabulary

/// Downloads an app's manifest (`BAManifestURL`) into a read-only file for its content request, under the app's
/// policy: its bytes count against the download allowance (203 when none is left, 204 when it is larger than what
/// is left), and transient failures are retried as any download's are.
struct ManifestFetch {
    let store: QueueStore
    let dataRoot: DataRoot
    let client: TransferClient
    let blocking: BlockingPool
    /// What a held fetch waits on: the machine's conditions changed (`turnNow`).
    let events: EngineEvents
    let networkWaits: NetworkWaitsDriver
    let retry: RetryPolicy
    /// How long a manifest may find no path to its server before it fails (`HostEngine.Settings.resourceTimeout`).
    let resourceTimeout: Duration
    let observe: LifecycleObserver

    /// The largest manifest fetched, whatever the allowance: a manifest lists assets, and once the app has launched
    /// nothing else would stop a server from filling the disk with one. A managed app's download manifest is read
    /// up to the same size (`DownloadManifest.maximumBytes`).
    static let maximumBytes: Int64 = 64 << 20
    /// The longest a manifest held by the machine's conditions waits before it is tried again, should no change be
    /// told (a guard: every change the system bus reports wakes it).
    static let heldRecheck = Duration.seconds(30)

    /// The path of the fetched manifest, or why it could not be fetched.
    func fetch(for app: AppRecord) async -> Result<String, HostError> {
        let policy = app.policy
        if let refusal = policy.checkURL(app.effectiveManifestURL) { return .failure(refusal) }
        if let refusal = policy.allowance.refusalToStart("the manifest", essential: false) { return .failure(refusal) }
        let partial = dataRoot.transfers.appendingPathComponent("manifest-\(UUID().uuidString)").path
        let limit = policy.allowance.unreservedBytesLeft(essential: false)
        let host = URLComponents.parsed(app.effectiveManifestURL)?.host ?? ""
        var request = TransferRequest(
            url: app.effectiveManifestURL, expectedSize: 0, partialPath: partial,
            byteLimit: min(limit ?? Self.maximumBytes, Self.maximumBytes),
            checkURL: { url in policy.checkURL(url).map(TransferError.init(refusal:)) })
        // Not discretionary (the content request waits for it), but sleep and no connectivity hold it too.
        request.networkUse = NetworkUse(discretionary: false, access: [], host: host)
        var attempt = 0
        var offlineSince: Date?
        while true {
            attempt += 1
            // Taken before the attempt: a change to the machine's conditions after it is not missed by the wait below.
            let mark = events.mark()
            // The transfer as any download's, then the disk and the queue on the blocking pool.
            let result = await client.perform(request, observer: NoProgress(), blocking: blocking) {
                result in result.map { bytes in record(bytes, for: app, at: partial) }
            }
            switch result {
            case .success(let recorded):
                networkWaits.reached(host)
                return recorded
            case .failure(let error):
                if error.code == TransferError.byteLimitExceeded {
                    guard let limit, limit < Self.maximumBytes else {
                        return .failure(HostError.bahost(
                            "the manifest is larger than \(Self.maximumBytes) bytes, the most bahost fetches for one"))
                    }
                    return .failure(Allowance.exceeded("the manifest", limit: limit))
                }
                if error.held != nil {
                    // Held by the machine's conditions (asleep, no connectivity): no attempt; tried again when they
                    // change (`HostEngine.apply` wakes the engine at once), or after `heldRecheck` at the latest.
                    guard !Task.isCancelled else { return .failure(error.error) }
                    attempt -= 1
                    observe(.manifestWaiting(error.error, retryIn: Self.heldRecheck))
                    await events.wait(for: .turnNow, after: mark, timeout: Self.heldRecheck)
                    continue
                }
                if error.offline {
                    // As a download's: no path to the server costs no attempt, until the resource timeout.
                    let now = Date()
                    let since = offlineSince ?? now
                    offlineSince = since
                    let timeout = resourceTimeout
                    guard now.timeIntervalSince(since) < timeout.inSeconds else {
                        unlink(partial)
                        var reason = error.error
                        reason.message = "no path to the server for \(timeout.spoken) (the resource timeout): " + reason.message
                        return .failure(reason)
                    }
                    attempt -= 1
                    let until = networkWaits.foundNoPath(host, now: now)
                    let wait = Duration.milliseconds(Int64(max(0, until.timeIntervalSince(now)) * 1000))
                    observe(.manifestWaiting(error.error, retryIn: wait))
                    try? await Task.sleep(for: wait)
                    continue
                }
                if !error.isCancellation {
                    offlineSince = nil
                    networkWaits.reached(host)
                }
                let delay = retry.delay(afterAttempt: attempt, error: error, random: { .random(in: 0..<1) })
                guard let delay else {
                    unlink(partial)
                    return .failure(error.error)
                }
                observe(.manifestWaiting(error.error, retryIn: delay))
                try? await Task.sleep(for: delay)
            }
        }
    }

    /// Charges a fetched manifest's bytes to the app's allowance and makes the file read-only. [blocking pool]
    private func record(_ bytes: Int64, for app: AppRecord, at partial: String) -> Result<String, HostError> {
        observe(.manifestFetched(bytes: bytes))
        do {
            try store.updateApp(app.appIdentifier) { app in
                var policy = app.policy
                if policy.allowance.restricted { policy.allowance.charge(bytes, essential: false) }
                app.take(policy)
            }
            chmod(partial, 0o444)
            return .success(partial)
        } catch {
            unlink(partial)
            return .failure(HostError.bahost("\(error)"))
        }
    }

    /// A read-only copy of a manifest given on the command line, where the window can read it.
    static func readOnlyCopy(of path: String, in folder: URL) throws -> String {
        let copy = folder.appendingPathComponent("manifest-\(UUID().uuidString)").path
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        chmod(copy, 0o444)
        return copy
    }
}

/// The manifest's transfer reports nothing while it runs.
private struct NoProgress: TransferObserver {
    func began(validator: Validator, resumingAt offset: Int64) {}
    func progress(received: Int64, expected: Int64) {}
}
