/// Waits until `condition` holds, looking every 20 ms for up to `seconds`, without holding a thread while it waits
/// (`ServiceDaemon.waitUntil` is the blocking form, for suites on threads of their own).
public func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try condition()
}
