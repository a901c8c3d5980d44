import Synchronization

/// The engine's one stream of events: whatever wakes its loop, and what its drains wait for, posted from any thread
/// as a set of kinds. The loop takes what came since it last looked (`next`); a drain waits for a kind posted
/// after a mark it took before looking at the queue (`mark`, `wait`), so that nothing posted between its look and its
/// wait is missed. A wait can end early, at its timeout, or when its task is cancelled, so waiters look again at
/// what they wait for.
final class EngineEvents: Sendable {
    struct Kinds: OptionSet, Sendable, Hashable {
        let rawValue: UInt8

        /// Something to look at again: a download queued, a transfer or a delivery ended, a deadline moved.
        static let queueChanged = Kinds(rawValue: 1 << 0)
        /// A wake that must not wait for the turns' pace: a foreground download, a promotion, a delegate, the network's
        /// conditions changed (`EngineDriver.paceNextTurn`).
        static let turnNow = Kinds(rawValue: 1 << 1)
        /// The reserve ran low: the paced wait for the next turn ends.
        static let reserveLow = Kinds(rawValue: 1 << 2)
        /// A transfer ended or was stopped, or a pack was installed: what the drains of essential downloads wait for.
        static let transferEnded = Kinds(rawValue: 1 << 3)

        /// What wakes the loop. `transferEnded` alone does not: the turn that records a transfer's outcome posts it,
        /// and a transfer's end that the loop must look at posts `queueChanged` with it.
        static let wakingTheLoop: Kinds = [.queueChanged, .turnNow, .reserveLow]
    }

    private enum Waiter {
        /// The loop: woken by any of `kinds`, which it takes.
        case loop(Kinds, CheckedContinuation<Kinds, Never>)
        /// A drain: woken by any of `kinds`, which stay for the loop.
        case drain(Kinds, CheckedContinuation<Void, Never>)
    }

    private struct State {
        /// Posted and not yet taken by the loop.
        var pending: Kinds = []
        /// Counts posts; `lastPosted[kind]` is the count at that kind's last post.
        var posts: UInt64 = 0
        var lastPosted: [UInt8: UInt64] = [:]
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]

        func postedAfter(_ mark: UInt64, _ kinds: Kinds) -> Bool {
            lastPosted.contains { kinds.contains(Kinds(rawValue: $0.key)) && $0.value > mark }
        }
    }

    private let state = Mutex(State())

    /// [any thread] Wakes the loop for what must not wait for the pace of its turns (`EngineDriver.paceNextTurn`): a
    /// foreground download, a promotion, a delegate, the machine's conditions changed.
    func wakeNow() { post([.queueChanged, .turnNow]) }

    /// [any thread] Posts `kinds`: wakes the loop if it waits for one of them, and every drain that does.
    func post(_ kinds: Kinds) {
        let (loop, drains) = state.withLock { state -> ((CheckedContinuation<Kinds, Never>, Kinds)?, [CheckedContinuation<Void, Never>]) in
            state.posts += 1
            for bit in 0..<8 where kinds.contains(Kinds(rawValue: 1 << bit)) { state.lastPosted[1 << bit] = state.posts }
            state.pending.formUnion(kinds)
            var loop: (CheckedContinuation<Kinds, Never>, Kinds)?
            var drains: [CheckedContinuation<Void, Never>] = []
            for (id, waiter) in state.waiters {
                switch waiter {
                case .loop(let wanted, let continuation) where !wanted.isDisjoint(with: state.pending):
                    let taken = state.pending.intersection(wanted)
                    state.pending.subtract(taken)
                    loop = (continuation, taken)
                    state.waiters[id] = nil
                case .drain(let wanted, let continuation) where !wanted.isDisjoint(with: kinds):
                    drains.append(continuation)
                    state.waiters[id] = nil
                default:
                    break
                }
            }
            return (loop, drains)
        }
        loop.map { $0.0.resume(returning: $0.1) }
        for drain in drains { drain.resume() }
    }

    /// [engine loop] Returns what of `kinds` was posted since the loop last took it, taking it: at once if some was,
    /// else at the next post of one of them, after `timeout`, or when the task is cancelled (then nothing).
    func next(of kinds: Kinds, timeout: Duration) async -> Kinds {
        await wait(timeout: timeout) { id, continuation in
            state.withLock { state -> Kinds? in
                let taken = state.pending.intersection(kinds)
                if !taken.isEmpty || Task.isCancelled {
                    state.pending.subtract(taken)
                    return taken
                }
                state.waiters[id] = .loop(kinds, continuation)
                return nil
            }
        }
    }

    /// [any thread] A mark for `wait(for:after:timeout:)`, taken before looking at what to wait for.
    func mark() -> UInt64 { state.withLock { $0.posts } }

    /// [any task] Returns once one of `kinds` was posted after `mark` (at once if it was already), after `timeout`, or
    /// when the task is cancelled. Takes nothing from the loop.
    func wait(for kinds: Kinds, after mark: UInt64, timeout: Duration) async {
        await wait(timeout: timeout) { id, continuation in
            state.withLock { state -> Void? in
                if state.postedAfter(mark, kinds) || Task.isCancelled { return () }
                state.waiters[id] = .drain(kinds, continuation)
                return nil
            }
        }
    }

    /// [any task] Returns once `busy` says no more, looking again after each transfer's end, a cancel or an uninstall
    /// (and at least every second); throws `CancellationError` when the task is cancelled. Each look is marked before
    /// it is made, so an end posted between the look and the wait is not missed.
    func waitForTransfers(while busy: () throws -> Bool) async throws {
        while true {
            let mark = mark()
            guard try busy() else { return }
            try Task.checkCancellation()
            await wait(for: .transferEnded, after: mark, timeout: .seconds(1))
        }
    }

    /// Registers a waiter with `register` (which answers at once with a value, or files the continuation under the
    /// id), and ends it empty at the timeout or the task's cancellation, whichever comes first.
    private func wait<T: Sendable>(
        timeout: Duration, register: (UInt64, CheckedContinuation<T, Never>) -> T?
    ) async -> T {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let timer = Mutex<Task<Void, Never>?>(nil)
        let value = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
                if let now = register(id, continuation) {
                    continuation.resume(returning: now)
                    return
                }
                // Started once the waiter is filed, so that whichever of a post, the timeout and cancellation comes
                // first ends it, once.
                timer.withLock {
                    $0 = Task {
                        try? await Task.sleep(for: timeout)
                        self.end(id)
                    }
                }
            }
        } onCancel: {
            end(id)
        }
        timer.withLock { $0?.cancel() }
        return value
    }

    /// Ends a waiter still filed: the loop with nothing taken, a drain as it is.
    private func end(_ id: UInt64) {
        switch state.withLock({ $0.waiters.removeValue(forKey: id) }) {
        case .loop(_, let continuation)?: continuation.resume(returning: [])
        case .drain(_, let continuation)?: continuation.resume()
        case nil: break
        }
    }
}
