import Engine
import Foundation
import Testing

@Suite struct EventJSONTests {
    /// The hand-written writer says what JSONSerialization says of the same object, escapes included.
    @Test func writesWhatJSONSerializationReads() throws {
        let object: [String: Any] = [
            "event": "queued", "url": "https://a.example.com/x?y=1", "essential": true, "fileSize": Int64(1 << 40),
            "count": 3, "seconds": 0.25, "whole": 2.0, "text": "line\nbreak \"quoted\" \\ \u{1} é",
            "nested": ["a": [1, 2], "b": ["c": false]], "list": [["k": "v"]],
        ]
        let line = EventJSON.line(object)
        #expect(!line.contains("\n"))
        #expect(line.hasPrefix(#"{"count":3,"essential":true,"event":"queued","#))
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(parsed["text"] as? String == object["text"] as? String)
        #expect(parsed["url"] as? String == "https://a.example.com/x?y=1")
        #expect((parsed["fileSize"] as? NSNumber)?.int64Value == 1 << 40)
        #expect((parsed["seconds"] as? NSNumber)?.doubleValue == 0.25)
        #expect(((parsed["nested"] as? [String: Any])?["b"] as? [String: Any])?["c"] as? Bool == false)
    }
}
