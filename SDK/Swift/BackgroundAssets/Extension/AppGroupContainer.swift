extension FileManager {
    /// The container shared by the app group's app and extension (Apple's API, which Foundation on Linux lacks):
    /// the folder bahost gives the window for its app's group, or nil for any other group, as Apple returns nil
    /// for a group the process does not belong to.
    public func containerURL(forSecurityApplicationGroupIdentifier groupIdentifier: String) -> URL? {
        let environment = ProcessInfo.processInfo.environment
        guard environment["BAHOST_APP_GROUP"] == groupIdentifier, let path = environment["BAHOST_APP_GROUP_CONTAINER"]
        else { return nil }
        return URL(fileURLWithPath: path, isDirectory: true)
    }
}
