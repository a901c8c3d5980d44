@testable import Desktop
import Testing

/// What the desktop is told while an app waits, and when a download failed: values, no bus.
@Suite struct LaunchNoticeTests {
    let app = DesktopEntry(appIdentifier: "com.example.levels", name: "Levels", icon: "applications-games")

    @Test func theWaitingNoticeSaysHowFarAndHowManyAreLeft() {
        let notice = LaunchNotice.waiting(app, .init(received: 1_572_864, expected: 3_145_728, left: 2))
        #expect(notice.summary == "Downloading required content")
        #expect(notice.body == "Levels: 50 % (1.5 of 3.0 MiB), 2 files left")
        #expect(notice.percent == 50 && notice.actions.isEmpty)
        let unknown = LaunchNotice.waiting(app, .init(received: 10, expected: 0, left: 1))
        #expect(unknown.percent == 0 && unknown.body == "Levels: 0 %, 1 file left")
        #expect(LaunchNotice.Progress(received: 9, expected: 4, left: 1).percent == 100)
    }

    @Test func aFailureNamesTheAssetAndWhyInWordsAndOffersToTryAgain() {
        let notice = LaunchNotice.failed(
            app, asset: "extras", domain: "NSURLErrorDomain", code: -1004, message: "cannot connect to cdn.example.com")
        #expect(notice.summary == "Levels could not download extras")
        #expect(notice.body.hasPrefix("The server could not be reached (NSURLErrorDomain -1004): cannot connect"))
        #expect(notice.actions.map(\.key) == [LaunchNotice.tryAgain] && notice.actions.map(\.label) == ["Try again"])
        #expect(notice.percent == nil && notice.urgency == 2)
        #expect(LaunchNotice.words(domain: "BAHostErrorDomain", code: 1002).contains("checksum"))
    }

    @Test func theDesktopEntrysNameAndIconAreReadAndBounded() {
        let entry = DesktopEntry.parse("""
            [Desktop Action Play]
            Name=Not this one
            [Desktop Entry]
            Name=Levels of Test
            Name[fr]=Niveaux
            Icon=applications-games
            Exec=bahost launch com.example.levels -- levels
            """, appIdentifier: "com.example.levels")
        #expect(entry.name == "Levels of Test" && entry.icon == "applications-games")
        #expect(entry.applicationURI == "application://com.example.levels.desktop")
        let long = DesktopEntry.parse("[Desktop Entry]\nName=\(String(repeating: "x", count: 5000))\u{7}", appIdentifier: "a")
        #expect(long.name.count == DesktopEntry.maximumValue)
        #expect(DesktopEntry.parse("", appIdentifier: "a").name == "a")
        let component = DesktopShell.pathComponent("com.example.levels")
        #expect(component.allSatisfy { $0.isNumber })
    }
}
