import Vocabulary
/// What an extension's host function calls reach, once the window has applied its own rules (no scheduling while
/// a content request runs; no foreground downloads from an extension). `bahost run` answers from the downloads of
/// this run; the service answers from its durable queue.
///
/// Thread rule: called on the thread running `ExtensionWindow.run`, one call at a time, and must not block: the
/// window's deadlines are enforced on that thread.
public protocol ExtensionHostServices: AnyObject {
    /// Apple's scheduleDownload(_:): validate and queue, or say why not.
    func schedule(_ download: Download) -> Result<Void, HostError>
    /// Apple's cancel(_:): `downloadNotScheduled` (101) when nothing matches.
    func cancel(_ download: Download) -> Result<Void, HostError>
    /// Apple's fetchCurrentDownloads(): the app's scheduled and in-flight downloads.
    func currentDownloads() -> Result<[Download], HostError>
    /// Tries once to take the app's exclusive-control lock; false when another process holds it.
    func tryAcquireExclusiveControl() -> Result<Bool, HostError>
    func releaseExclusiveControl()
}
