import Foundation
import HostVocabulary
@testable import Queue
import Testing

/// The data root's layout: names made from identifiers that extension code chose.
@Suite struct DataRootTests {
    /// Every byte outside `A-Z a-z 0-9 -` is percent-encoded (UTF-8 bytes included), so a name never holds a `/`,
    /// is never `..`, and two identifiers never share one.
    @Test func fileNamesEncodeEveryOtherByte() {
        #expect(DataRoot.fileName("BAURLDownload.group.x.1-a") == "BAURLDownload%2Egroup%2Ex%2E1-a")
        #expect(DataRoot.fileName("../é/") == "%2E%2E%2F%C3%A9%2F")
        #expect(DataRoot.fileName("a%2E") != DataRoot.fileName("a."))
        let root = DataRoot("/data")
        #expect(root.partialPath(for: "a/b") == "/data/transfers/a%2Fb.part")
        #expect(root.deliveries(for: "group.x").path == "/data/containers/group.x/Library/Caches/BackgroundAssets")
        #expect(root.finishedPath(for: "a/b", appGroupIdentifier: "group.x")
            == root.deliveries(for: "group.x").appendingPathComponent("a%2Fb", isDirectory: false).path)
        #expect(DataRoot("/data/").partialPath(for: "a") == "/data/transfers/a.part")
    }

    /// A name that would pass the file system's limit (255 bytes, with its suffix) is its first bytes and the
    /// SHA-256 of the whole identifier, after a `~` no other name holds; names that fit are as before.
    @Test func fileNamesOfLongIdentifiersFitAndStayDistinct() {
        let long = String(repeating: ".a", count: 512)
        let other = String(long.dropLast()) + "b"
        let name = DataRoot.fileName(long)
        #expect(name.utf8.count <= DataRoot.longestFileName && DataRoot.longestFileName + ".failed".utf8.count <= 255)
        #expect(name.hasPrefix("%2Ea%2Ea") && name.contains("~"))
        #expect(name == DataRoot.fileName(long))
        #expect(name != DataRoot.fileName(other))
        // Never an escape cut in two: the part before `~` decodes to the identifier's start. Here byte 160 falls
        // inside an escape, which is left out whole.
        let cut = "aa" + String(repeating: ".a", count: 511)
        for identifier in [long, cut] {
            let kept = String(DataRoot.fileName(identifier).split(separator: "~")[0])
            #expect(kept.removingPercentEncoding.map { identifier.hasPrefix($0) } == true, "\(kept)")
        }
        #expect(DataRoot.fileName(cut).split(separator: "~")[0].utf8.count == 158)
        // A name that fits is the one earlier releases made, and holds no `~` (encoded like every other byte).
        let fits = String(repeating: "b", count: DataRoot.longestFileName)
        #expect(DataRoot.fileName(fits) == fits)
        #expect(DataRoot.fileName(fits + "~") != DataRoot.fileName(fits) && DataRoot.fileName("~") == "%7E")
    }
}
