import ServiceWire
import Vocabulary

/// What a language binding of the app's side needs beyond Apple's API (the C library, `libbackgroundassets`): to
/// choose the service and the identity, to connect eagerly and to disconnect. Not for apps written in Swift.
@_spi(Bindings) extension BADownloadManager {
    /// Connects to the service at `socketPath` as `appIdentifier` (nil: the defaults an app in Swift has) and
    /// introduces the app, throwing what the socket or the service said. Replaces any earlier connection.
    public func connect(socketPath: String?, appIdentifier: String?) throws {
        let transport = ServiceTransport(
            socketPath: socketPath ?? ServiceProtocol.defaultSocketPath,
            appIdentifier: appIdentifier ?? ProcessInfo.processInfo.environment["BAHOST_APP_IDENTIFIER"])
        try transport.connect()
        let previous = self.transport
        self.transport = transport
        (previous as? ServiceTransport)?.disconnect()
    }

    /// Clears the delegate and closes the connection: callbacks still waiting are not answered, so the service
    /// offers them again. The next call connects anew with the defaults.
    public func disconnect() {
        delegate = nil
        let previous = transport
        transport = ServiceTransport()
        (previous as? ServiceTransport)?.disconnect()
    }

    /// The app group's container as the service reports it; nil for a group that is not the app's.
    public func containerPath(forGroup group: String) -> String? {
        (transport as? ServiceTransport)?.container(forGroup: group)?.path
    }
}

@_spi(Bindings) extension BADownloadManager {
    /// Blocks until exclusive control is held (`timeoutMilliseconds` < 0: as long as needed; 0: one try), or throws.
    public func acquireExclusiveControl(timeoutMilliseconds: Int64) throws {
        try transport.acquireExclusiveControl(timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Gives up exclusive control; nothing happens when it is not held.
    public func releaseExclusiveControl() { transport.releaseExclusiveControl() }
}

/// A binding's download as its caller described it (`ba_download_t`), not as an object: the C ABI lets an app leave
/// `unique_identifier` NULL on a download it made, and such a download names the app's active download with its
/// `identifier`, which is unique among an app's active downloads. So the value an app scheduled is the value it
/// cancels or promotes, as the object an app schedules on Apple is (it carries its `uniqueIdentifier` from creation).
@_spi(Bindings) extension BADownloadManager {
    /// `scheduleDownload(_:)`; the service gives a download without a unique identifier one.
    public func scheduleDownload(described download: Download) throws {
        if answeringContentRequest.withLock({ $0 }) {
            throw NSError.backgroundAssets(
                .callFromExtensionNotAllowed,
                "downloads cannot be scheduled inside downloads(for:manifestURL:extensionInfo:); return them")
        }
        try transport.schedule(download)
    }

    /// `startForegroundDownload(_:)`: promotes the app's active download of this identifier when there is one.
    public func startForegroundDownload(described download: Download) throws {
        try transport.startForeground(download)
    }

    /// `cancel(_:)`: 101 when the app has no active download of this identifier (or unique identifier).
    public func cancel(described download: Download) throws {
        try transport.cancel(download)
    }
}
