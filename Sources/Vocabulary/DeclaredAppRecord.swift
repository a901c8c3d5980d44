
/// What the service last did for an app that a package declared in a folder (docs/PACKAGING.md): the
/// folder, the version (`CFBundleVersion`) it acted on, and whether that action is done. A row whose action is not
/// done was interrupted (the service was killed in it): the next start carries it out again.
public struct DeclaredAppRecord: Codable, Sendable, Hashable {
    public enum State: String, Codable, Sendable {
        /// The install request is under way for `version`.
        case installing
        /// The update request is under way for `version`.
        case updating
        /// `version` is installed and its request ran.
        case installed
        /// The folder stayed gone: the app is being uninstalled.
        case uninstalling
    }

    public var appIdentifier: String
    public var folder: String
    public var version: String
    public var state: State

    public init(appIdentifier: String, folder: String, version: String, state: State) {
        self.appIdentifier = appIdentifier
        self.folder = folder
        self.version = version
        self.state = state
    }
}
