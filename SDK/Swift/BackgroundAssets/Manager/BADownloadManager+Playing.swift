import Foundation

extension BADownloadManager {
    /// Says whether a game of this app is being played (a bahost addition; Apple has no such call). While one is,
    /// the person's `game.while-playing` setting holds or slows the machine's background downloads, as while
    /// GameMode has a client (docs/DOWNLOADS.md, "What the person decides"). Kept across reconnections; the app's
    /// end ends it. Throws Apple's 56 when the service cannot be reached; in an extension, it does nothing.
    public func setPlaying(_ playing: Bool) throws {
        try (transport as? ServiceTransport)?.setPlaying(playing)
    }
}
