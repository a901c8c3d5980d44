extension FileManager {
    /// The container shared by the app group's app and extension (Apple's API, which Foundation on Linux lacks):
    /// in an extension, the folder bahost gives the window; in an app, the one the service reports for the app's
    /// group. Nil for any other group, as Apple returns nil for a group the process does not belong to.
    public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? {
        let environment = ProcessInfo.processInfo.environment
        if let group = environment["BAHOST_APP_GROUP"], let path = environment["BAHOST_APP_GROUP_CONTAINER"] {
            return group == groupIdentifier ? URL(fileURLWithPath: path, isDirectory: true) : nil
        }
        return (BADownloadManager.shared.transport as? ServiceTransport)?.container(forGroup: groupIdentifier)
    }
}
