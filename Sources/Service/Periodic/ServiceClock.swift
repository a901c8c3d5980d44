import Foundation
import Synchronization

/// The service's idea of now: the wall clock, moved forward by `bahost debug clock --advance` in development, so
/// that tests and extension authors can see a day of periodic scheduling in seconds.
public final class ServiceClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    public init() {}

    public var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }

    public var offsetSeconds: TimeInterval { offset.withLock { $0 } }

    public func advance(by seconds: TimeInterval) {
        offset.withLock { $0 += max(0, seconds) }
    }
}
