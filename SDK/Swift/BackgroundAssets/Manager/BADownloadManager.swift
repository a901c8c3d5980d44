import ServiceWire
import Synchronization
import Vocabulary

/// The queue of scheduled asset downloads, shared by an app and its extension (Apple's `BADownloadManager`).
///
/// Inside an extension loaded by bahost, calls reach the host through the C ABI with Apple's rules: scheduling is
/// refused inside `downloads(for:manifestURL:extensionInfo:)`, and `startForegroundDownload` is for the app only.
/// In an app, they reach the `bahost daemon` service over its socket, which also calls the delegate.
public final class BADownloadManager: NSObject, @unchecked Sendable {  // safe: its state is behind mutexes
    /// The download manager that both the app and the extension share.
    public static let shared = BADownloadManager()

    private struct WeakDelegate: @unchecked Sendable {  // safe: only read and written inside `delegateBox`'s lock
        weak var value: (any BADownloadManagerDelegate)?
    }

    private let delegateBox = Mutex(WeakDelegate())
    private let transportBox = Mutex<any HostTransport>(ServiceTransport())
    /// Set while `downloads(for:…)` runs, when Apple prohibits scheduling.
    let answeringContentRequest = Mutex(false)

    override private init() {}

    /// Receives the events of this app's downloads. Held weakly. While an app has one, its downloads' completions
    /// come to it instead of waking the extension (for each method it implements).
    public weak var delegate: (any BADownloadManagerDelegate)? {
        get { delegateBox.withLock { $0.value } }
        set {
            let changed = delegateBox.withLock { box in
                defer { box.value = newValue }
                return (box.value == nil) != (newValue == nil)
            }
            if changed { transport.delegateChanged(isSet: newValue != nil) }
        }
    }

    var transport: any HostTransport {
        get { transportBox.withLock { $0 } }
        set { transportBox.withLock { $0 = newValue } }
    }

    /// Schedules a download to run in the background at the system's discretion.
    public func scheduleDownload(_ download: BADownload) throws {
        if answeringContentRequest.withLock({ $0 }) {
            throw NSError.backgroundAssets(
                .callFromExtensionNotAllowed,
                "downloads cannot be scheduled inside downloads(for:manifestURL:extensionInfo:); return them")
        }
        try transport.schedule(Download(download))
    }

    /// Starts a download now, or promotes a scheduled one (resuming it). App only: an extension gets code 50.
    public func startForegroundDownload(_ download: BADownload) throws {
        try transport.startForeground(Download(download))
    }

    /// Cancels a scheduled or running download; code 101 when it is not scheduled.
    public func cancel(_ download: BADownload) throws {
        try transport.cancel(Download(download))
    }

    /// The app's scheduled and in-flight downloads. Blocks: do not call it from the main thread.
    public func fetchCurrentDownloads() throws -> [BADownload] {
        try transport.currentDownloads()
    }

    /// The app's scheduled and in-flight downloads, delivered on an arbitrary thread.
    public func fetchCurrentDownloads(completionHandler: @escaping @Sendable ([BADownload], (any Error)?) -> Void) {
        let transport = self.transport
        Thread.detachNewThread {
            do {
                completionHandler(try transport.currentDownloads(), nil)
            } catch {
                completionHandler([], error)
            }
        }
    }

    /// The app's scheduled and in-flight downloads.
    public var currentDownloads: [BADownload] {
        get async throws {
            let transport = self.transport
            return try await Self.offThread { try transport.currentDownloads() }
        }
    }

    /// Runs `performHandler` while holding exclusive control between the app and its extension, waiting for it as
    /// long as needed. The handler gets `false` and an error when control could not be acquired.
    ///
    /// The handler is not `@Sendable`, as in Apple's shipping SDKs (only the 27 beta made it so): code written for
    /// them captures a non-Sendable `self` in it and must compile unchanged.
    @available(*, deprecated, message: "Use the asynchronous overload of withExclusiveControl(_:) instead")
    public func withExclusiveControl(_ performHandler: @escaping (Bool, (any Error)?) -> Void) {
        withExclusiveControl(timeoutMilliseconds: -1, UncheckedHandler(performHandler))
    }

    /// Like `withExclusiveControl(_:)`, giving up at `date`; a date that has passed tries exactly once.
    @available(*, deprecated, message: "Use withExclusiveControl(before:_:) instead.")
    public func withExclusiveControl(
        beforeDate date: Date, perform performHandler: @escaping (Bool, (any Error)?) -> Void
    ) {
        withExclusiveControl(timeoutMilliseconds: Self.milliseconds(until: date), UncheckedHandler(performHandler))
    }

    /// A handler of the closure forms, carried to the thread that runs it. Unchecked as Apple's is: the caller
    /// gave a closure that is not `@Sendable` to an API that calls it on another thread, which Apple's declaration
    /// allows and its documentation describes; it runs once, on that thread only.
    private struct UncheckedHandler: @unchecked Sendable {
        let call: (Bool, (any Error)?) -> Void
        init(_ call: @escaping (Bool, (any Error)?) -> Void) { self.call = call }
    }

    /// Acquires exclusive control, waiting as long as needed, runs `body`, and gives control up when `body`
    /// returns or throws.
    public final func withExclusiveControl<ReturnType>(_ body: @escaping () throws -> sending ReturnType)
        async throws -> sending ReturnType
    {
        try await exclusively(timeoutMilliseconds: -1, body)
    }

    /// Like `withExclusiveControl(_:)`, throwing if control cannot be acquired before `date` (a past date tries
    /// once).
    public final func withExclusiveControl<ReturnType>(
        before date: Date, _ body: @escaping () throws -> sending ReturnType
    ) async throws -> sending ReturnType {
        try await exclusively(timeoutMilliseconds: Self.milliseconds(until: date), body)
    }

    private func exclusively<ReturnType>(
        timeoutMilliseconds: Int64, _ body: @escaping () throws -> sending ReturnType
    ) async throws -> sending ReturnType {
        let transport = self.transport
        try await Self.offThread { try transport.acquireExclusiveControl(timeoutMilliseconds: timeoutMilliseconds) }
        defer { transport.releaseExclusiveControl() }
        return try body()
    }

    /// The closure forms. In an extension, control is acquired (or refused) before this returns, on the calling
    /// thread, and only the handler runs on a thread of its own: the window then holds a callback open until it has
    /// control, and control until the handler returns, so every handler an extension asks for runs, in the order
    /// asked, before the window ends (or the window's budget ends it). Acquiring on another thread let the callback
    /// return first, and the window ended before the request reached the host. In an app, nothing waits for the
    /// caller: everything happens on the handler's thread.
    private func withExclusiveControl(timeoutMilliseconds: Int64, _ handler: UncheckedHandler) {
        let transport = self.transport
        let acquire: @Sendable () -> (any Error)? = {
            do {
                try transport.acquireExclusiveControl(timeoutMilliseconds: timeoutMilliseconds)
                return nil
            } catch {
                return error
            }
        }
        let run: @Sendable ((any Error)?) -> Void = { error in
            guard error == nil else { return handler.call(false, error) }
            handler.call(true, nil)
            transport.releaseExclusiveControl()
        }
        if transport.isExtension {
            let error = acquire()
            Thread.detachNewThread { run(error) }
        } else {
            Thread.detachNewThread { run(acquire()) }
        }
    }

    /// Runs a blocking host call on a thread of its own, so it never stalls Swift's cooperative pool.
    private static func offThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    static func milliseconds(until date: Date) -> Int64 {
        max(0, Int64((date.timeIntervalSinceNow * 1000).rounded(.up)))
    }
}
