import Foundation
import HostVocabulary
import Testing

/// URLs parsed once and remembered.
@Suite struct ParsedURLTests {
    /// The parse remembered for the last URL is reused only for the same bytes: a canonically equivalent text (é
    /// composed or not), which Swift's `==` takes as equal, is parsed on its own.
    @Test func aRememberedParseIsReusedOnlyForTheSameBytes() throws {
        let decomposed = "https://a.example.com/e\u{301}", composed = "https://a.example.com/\u{e9}"
        #expect(decomposed == composed)
        let first = try #require(URLComponents.parsed(decomposed))
        let second = try #require(URLComponents.parsed(composed))
        #expect(first.percentEncodedPath == "/e%CC%81" && second.percentEncodedPath == "/%C3%A9")
    }
}
