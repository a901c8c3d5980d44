import Foundation
import HostVocabulary
import Packs
import Peers
import Queue

extension HostEngine {
    /// Takes the person's rules for sharing with peers (`peers.share`, `peers.upload`, and the battery): starts or
    /// stops the session, and, when it starts, serves the archives this machine holds. [any thread]
    public func applyPeerRules(_ rules: PeerRules) {
        guard peers.apply(rules) else { return }
        Task { [self] in await servePeers() }
    }

    /// What a download took from peers and from the CDN through the swarm, since the engine started; nil when it
    /// never went through one. [any thread]
    public func peerFigures(_ uniqueIdentifier: String) -> PeerFigures? { peers.figures(uniqueIdentifier) }

    /// Where sharing with peers stands. [any thread]
    public var peerSummary: PeerSummary { peers.summary() }

    /// Whether a session shares packs with peers now. [any thread]
    public var sharesWithPeers: Bool { peers.isActive }

    /// Serves the current archive of every pack of the apps that share, where this machine holds it whole, and
    /// forgets the rest of the peers' folder: an app that stopped sharing, a version that moved on, an app gone.
    /// [any task: the work runs on the blocking pool]
    func servePeers() async {
        guard peers.isActive else { return }
        let (store, peers, packs) = (store, peers, managedPacks)
        _ = try? await blocking.run {
            var files: [SwarmFile] = []
            for app in try store.apps() where app.sharesWithPeers && app.hasManagedAssetPacks {
                for entry in packs.catalogue(for: app)?.assetPacks ?? [] {
                    if let file = peers.sharedFile(entry, url: entry.url, app: app, have: true) { files.append(file) }
                }
            }
            peers.serveOnly(files)
        }
    }
}
