import Foundation
import ServiceWire

/// What a language binding of the app's side needs beyond Apple's `AssetPackManager` (the C library): a manager for
/// a chosen service and identity, connected eagerly, and calls that Apple reaches through other objects.
@_spi(Bindings) extension AssetPackManager {
    /// A manager of its own for the service at `socketPath` as `appIdentifier` (nil: the defaults), connected now.
    public static func connected(socketPath: String?, appIdentifier: String?) throws -> AssetPackManager {
        let manager = AssetPackManager(
            socketPath: socketPath ?? ServiceProtocol.defaultSocketPath,
            appIdentifier: appIdentifier ?? ProcessInfo.processInfo.environment["BAHOST_APP_IDENTIFIER"])
        try manager.transport.connect()
        return manager
    }

    /// Stops the pack's download, as `progress.cancel()` on one of its status updates does.
    public nonisolated func cancelDownload(ofAssetPackWithID id: String) throws {
        _ = try transport.request(.cancelAssetPackDownload(id))
    }

    /// Closes the manager's connection for good.
    public nonisolated func disconnect() { transport.disconnect() }
}
