import ExtensionRuntime
import Queue
import HostVocabulary

extension DataRoot {
    /// The app group a window of `app` gets: its identifier and its container.
    func appGroup(of app: AppRecord) -> ExtensionWindow.AppGroup {
        ExtensionWindow.AppGroup(
            identifier: app.appGroupIdentifier, container: container(for: app.appGroupIdentifier).path)
    }
}
