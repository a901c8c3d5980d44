import Foundation

/// A window's log as the host keeps it, whatever the extension prints or logs: the head and the tail, each at most
/// `maxLines` lines and `maxBytes` bytes (a line counts 64 bytes more than its text, so that empty lines are bounded
/// too), a count of what was dropped between them, and every line cut at `maxLineBytes`. A window that prints
/// 200 MB leaves a report, and a host, of the same size as one that prints 1 MB.
///
/// A value with no I/O: the window's driver feeds it what it reads and asks it for the report's lines.
struct WindowLog {
    static let maxLines = 5_000
    static let maxBytes = 256 * 1024
    static let maxLineBytes = 16 * 1024

    private var head: [WindowLogLine] = []
    private var headBytes = 0
    /// The last lines once the head is full, oldest first from `tailStart`.
    private var tail: [WindowLogLine] = []
    private var tailStart = 0
    private var tailBytes = 0
    private(set) var droppedLines = 0
    private(set) var droppedBytes = 0
    /// Output read since the last newline.
    private var partialOutput: [UInt8] = []

    /// Keeps a line, cut to `maxLineBytes`, and returns it as kept.
    @discardableResult
    mutating func record(_ source: WindowLogLine.Source, _ text: String, at seconds: Double) -> WindowLogLine {
        let message = Self.bounded(text)
        let line = WindowLogLine(source: source, message: message, at: seconds)
        let bytes = message.utf8.count + 64
        if tail.isEmpty && head.count < Self.maxLines && headBytes + bytes <= Self.maxBytes {
            head.append(line)
            headBytes += bytes
            return line
        }
        tail.append(line)
        tailBytes += bytes
        while tail.count - tailStart > Self.maxLines || tailBytes > Self.maxBytes {
            tailBytes -= tail[tailStart].message.utf8.count + 64
            droppedBytes += tail[tailStart].message.utf8.count
            droppedLines += 1
            // Its text is freed now, not when the slot is compacted away: the host's memory for a window's log is
            // what the report keeps, whatever the rate and size of the lines.
            tail[tailStart].message = ""
            tailStart += 1
        }
        if tailStart > 1024 && tailStart * 2 > tail.count {
            tail.removeFirst(tailStart)
            tailStart = 0
        }
        return line
    }

    /// Takes what the process printed: each complete line, and a line longer than `maxLineBytes` in pieces. Returns
    /// the lines kept.
    mutating func append(output bytes: some Collection<UInt8>, at seconds: Double) -> [WindowLogLine] {
        partialOutput.append(contentsOf: bytes)
        var lines: [WindowLogLine] = []
        while let newline = partialOutput.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(record(.output, String(decoding: partialOutput[..<newline], as: UTF8.self), at: seconds))
            partialOutput.removeSubrange(...newline)
        }
        while partialOutput.count >= Self.maxLineBytes {
            lines.append(record(.output, String(decoding: partialOutput.prefix(Self.maxLineBytes), as: UTF8.self), at: seconds))
            partialOutput.removeFirst(Self.maxLineBytes)
        }
        return lines
    }

    /// Keeps what the process printed after its last newline, if anything.
    mutating func flushOutput(at seconds: Double) -> WindowLogLine? {
        defer { partialOutput = [] }
        guard !partialOutput.isEmpty else { return nil }
        return record(.output, String(decoding: partialOutput, as: UTF8.self), at: seconds)
    }

    /// The report's lines: the head, a warning saying what was dropped (if anything), the tail.
    func lines(endingAt seconds: Double) -> [WindowLogLine] {
        var lines = head
        if droppedLines > 0 {
            lines.append(WindowLogLine(
                source: .warning,
                message: "bahost: \(droppedLines) lines (\(droppedBytes) bytes) of output were not kept between the first and the last",
                at: seconds))
        }
        return lines + tail[tailStart...]
    }

    /// A line as the host keeps it: at most `maxLineBytes`, saying how much was cut (the runner cuts an extension's
    /// log messages the same way; this bounds whatever else reaches the host).
    static func bounded(_ text: String) -> String {
        let count = text.utf8.count
        guard count > maxLineBytes else { return text }
        let kept = maxLineBytes - 64
        return String(decoding: text.utf8.prefix(kept), as: UTF8.self) + "… (\(count - kept) more bytes cut by bahost)"
    }
}
