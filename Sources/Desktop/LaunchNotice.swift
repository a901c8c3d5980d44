import Foundation

/// What the desktop shows while an app waits for its essential downloads, and when one of them failed: the
/// notification's text and progress, and the dock's launcher entry, as values (`LaunchNoticeTests`); `DesktopShell`
/// shows them.
public struct LaunchNotice: Sendable, Hashable {
    /// The essential downloads of the app's last install or update: bytes received of those expected, and how many
    /// are still to finish.
    public struct Progress: Sendable, Hashable {
        public var received: Int64
        public var expected: Int64
        public var left: Int

        public init(received: Int64, expected: Int64, left: Int) {
            self.received = received
            self.expected = expected
            self.left = left
        }

        /// 0 to 100; 0 while nothing is known of the size.
        public var percent: Int32 {
            guard expected > 0 else { return 0 }
            return Int32(max(0, min(100, received * 100 / expected)))
        }

        /// 0 to 1, for the launcher entry.
        public var fraction: Double { Double(percent) / 100 }
    }

    public var summary: String
    public var body: String
    /// The progress bar's value (the `value` hint), nil for none.
    public var percent: Int32?
    /// Notification actions: key, label.
    public var actions: [(key: String, label: String)]
    /// The `urgency` hint: 1 normal, 2 critical.
    public var urgency: UInt8

    public static func == (a: LaunchNotice, b: LaunchNotice) -> Bool {
        a.summary == b.summary && a.body == b.body && a.percent == b.percent && a.urgency == b.urgency
            && a.actions.map(\.key) == b.actions.map(\.key) && a.actions.map(\.label) == b.actions.map(\.label)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(summary)
        hasher.combine(body)
        hasher.combine(percent)
    }

    /// The notification while `app` waits; `summary` says for what.
    public static func waiting(
        _ app: DesktopEntry, _ progress: Progress, summary: String = "Downloading required content"
    ) -> LaunchNotice {
        var body = "\(app.name): \(progress.percent) %"
        if progress.expected > 0 {
            body += " (\(Self.mebibytes(progress.received)) of \(Self.mebibytes(progress.expected)) MiB)"
        }
        if progress.left > 0 { body += ", \(progress.left) file\(progress.left == 1 ? "" : "s") left" }
        return LaunchNotice(summary: summary, body: body, percent: progress.percent, actions: [], urgency: 1)
    }

    /// The action key that schedules a failed download again. "default" is also the notification's own click (and
    /// dunst's `dunstctl action`), so both ask for it.
    public static let tryAgain = "default"

    /// The notification for an essential download of `app` that failed: which asset, and why in words.
    public static func failed(_ app: DesktopEntry, asset: String, domain: String, code: Int64, message: String)
        -> LaunchNotice
    {
        LaunchNotice(
            summary: "\(app.name) could not download \(asset)",
            body: "\(Self.words(domain: domain, code: code)) (\(domain) \(code)): \(message). "
                + "\(app.name) starts without it.",
            percent: nil, actions: [(tryAgain, "Try again")], urgency: 2)
    }

    /// Apple's domain and code in words, for a person.
    static func words(domain: String, code: Int64) -> String {
        switch (domain, code) {
        case ("NSURLErrorDomain", -1001): "The server took too long to answer"
        case ("NSURLErrorDomain", -1003): "The server's name was not found"
        case ("NSURLErrorDomain", -1004): "The server could not be reached"
        case ("NSURLErrorDomain", -1005), ("NSURLErrorDomain", -1009): "The network connection was lost"
        case ("NSURLErrorDomain", -1013): "The server asked for a password"
        case ("NSURLErrorDomain", -1200), ("NSURLErrorDomain", -1202): "The server's certificate was not trusted"
        case ("NSURLErrorDomain", 400..<500): "The server refused the download"
        case ("NSURLErrorDomain", 500..<600): "The server failed"
        case ("NSURLErrorDomain", _): "The download failed"
        case ("BAErrorDomain", _): "The download was not allowed"
        case (_, 1001): "The file had another size than promised"
        case (_, 1002): "The file was damaged (its checksum did not match)"
        case (_, 1003): "There is not enough disk space"
        default: "The download failed"
        }
    }

    static func mebibytes(_ bytes: Int64) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }
}
