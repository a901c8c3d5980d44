@testable import ExtensionRuntime
import Testing

/// The window's log as a value, without a process: what the host keeps of whatever an extension prints.
@Suite struct WindowLogTests {
    @Test func aFloodKeepsItsHeadAndTailAndSaysWhatWasDropped() throws {
        var log = WindowLog()
        for number in 0..<20_000 { log.record(.info, "\(number)", at: 0) }
        let lines = log.lines(endingAt: 1)
        let warning = try #require(lines.firstIndex { $0.source == .warning })
        let head = lines[..<warning].map(\.message), tail = lines[(warning + 1)...].map(\.message)
        // The first lines and the last, each part whole and in order, and the count of what fell between them.
        #expect(head == (0..<head.count).map { "\($0)" })
        #expect(tail == ((20_000 - tail.count)..<20_000).map { "\($0)" })
        #expect(head.count + tail.count + log.droppedLines == 20_000)
        #expect(lines[warning].message.contains("\(log.droppedLines) lines"))
        // Each part within its bounds: lines, and bytes counting 64 a line.
        for part in [head, tail] {
            #expect(part.count <= WindowLog.maxLines)
            #expect(part.reduce(0) { $0 + $1.utf8.count + 64 } <= WindowLog.maxBytes)
        }
    }

    @Test func longLinesAreBoundedInCountAndInBytes() {
        var log = WindowLog()
        let line = String(repeating: "é", count: WindowLog.maxLineBytes)  // two bytes each: twice the bound
        for _ in 0..<200 { log.record(.info, line, at: 0) }
        let lines = log.lines(endingAt: 1)
        let kept = lines.filter { $0.source == .info }
        #expect(kept.allSatisfy { $0.message.utf8.count <= WindowLog.maxLineBytes + 64 })
        #expect(kept.first?.message.hasSuffix("more bytes cut by bahost)") == true)
        // Head and tail hold at most maxBytes each, counting 64 bytes a line.
        #expect(kept.reduce(0) { $0 + $1.message.utf8.count + 64 } <= 2 * WindowLog.maxBytes)
        #expect(log.droppedLines > 0 && log.droppedBytes > 0)
    }

    @Test func outputIsSplitIntoLinesAndALineWithoutItsNewlineIsKeptAtTheEnd() {
        var log = WindowLog()
        let first = log.append(output: Array("one\ntwo\nthr".utf8), at: 0)
        #expect(first.map(\.message) == ["one", "two"])
        #expect(log.append(output: Array("ee".utf8), at: 0).isEmpty)
        #expect(log.flushOutput(at: 0)?.message == "three")
        #expect(log.flushOutput(at: 0) == nil)
        // A line that never ends comes in pieces of the bound, not as one unbounded line.
        let pieces = log.append(output: [UInt8](repeating: UInt8(ascii: "x"), count: 2 * WindowLog.maxLineBytes + 10), at: 0)
        #expect(pieces.count == 2 && pieces.allSatisfy { $0.message.utf8.count == WindowLog.maxLineBytes })
        #expect(log.flushOutput(at: 0)?.message.utf8.count == 10)
        #expect(log.lines(endingAt: 0).allSatisfy { $0.source == .output })
    }
}
