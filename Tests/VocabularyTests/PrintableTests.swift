import Testing
import Vocabulary

/// Text another party wrote, made fit to print.
@Suite struct PrintableTests {
    /// Printable ASCII passes as it is; everything else is escaped or cut, on either side of the limit.
    @Test func printableTextEscapesAndCutsWhatAnotherPartyWrote() {
        #expect("level-1 (64 KiB)".printable() == "level-1 (64 KiB)")
        #expect("a\\b".printable() == "a\\\\b")
        #expect("a\u{7f}b\u{85}c".printable() == "a\\u{7f}b\\u{85}c")
        #expect("café ☕".printable() == "café ☕")
        #expect("abcdef".printable(limit: 6) == "abcdef")
        #expect("abcdefg".printable(limit: 6) == "abcdef… (1 more characters)")
        #expect("ééééééé".printable(limit: 6) == "éééééé… (1 more characters)")
    }
}
