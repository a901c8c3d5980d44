/// Why the system woke the extension (Apple's `BAContentRequest`, same raw values).
public enum BAContentRequest: Int, Sendable, Hashable {
    /// The app was installed.
    case install = 1
    /// The app was updated.
    case update = 2
    /// The system asks for updated content, on a cadence that follows app usage.
    case periodic = 3
    /// Someone changed the app's preferred language.
    case languageChange = 4
}
