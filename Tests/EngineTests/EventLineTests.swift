@testable import Engine
import Foundation
import Testing

/// Sizes in event lines, as `%.1f MiB` wrote them.
@Suite struct EventLineTests {
    @Test func sizesRoundAsPrintfDoes() {
        for bytes: Int64 in [1, 65536, 262_144, 786_432, 1_048_576, 1_101_005, 1 << 30, 123_456_789_012, .max] {
            #expect(LifecycleEvent.size(bytes) == String(format: "%.1f MiB", Double(bytes) / 1_048_576), "\(bytes)")
        }
        #expect(LifecycleEvent.size(0) == "size unknown")
    }
}
