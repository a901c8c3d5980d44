import Synchronization

/// The service's waiting primitive: a task waits on a signal until it fires, a timeout passes, or the task is
/// cancelled. A fire wakes every task waiting at that moment; when none is, it is kept for the next wait, so that a
/// fire between a caller's check and its wait is never lost. A wait can end early, so waiters always look again at
/// what they wait for.
public final class Signal: Sendable {
    private struct State {
        var pending = false
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    public func fire() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.waiters.isEmpty else {
                state.pending = true
                return []
            }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns at the next fire (or at once for one kept from before), after `timeout`, or when the task is
    /// cancelled, whichever comes first.
    public func wait(for timeout: Duration) async {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        var timer: Task<Void, Never>?
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiters[id] = continuation
                    return false
                }
                if now {
                    continuation.resume()
                    return
                }
                // Started once the waiter is registered, so that whichever of fire, timeout and cancellation comes
                // first resumes it, once.
                timer = Task {
                    try? await Task.sleep(for: timeout)
                    self.resume(id)
                }
            }
        } onCancel: {
            resume(id)
        }
        timer?.cancel()
    }

    private func resume(_ id: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }
}
