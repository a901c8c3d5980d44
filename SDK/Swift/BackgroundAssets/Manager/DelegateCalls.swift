import Dispatch
import Synchronization

/// The app delegate's calls, one at a time in the order they came, as one task.
///
/// The delegate's requirements are `async` so that a `@MainActor` delegate compiles in Swift 6 mode, as it does
/// against Apple's SDK (which imports the Objective-C protocol as `@preconcurrency`): its methods run on the main
/// actor, which the app runs (SwiftUI, an `async` main, `dispatchMain()`). A nonisolated delegate's methods run on
/// this object's thread (a task executor over a serial queue), never on Swift's cooperative pool, since a binding's
/// delegate may block there until its app takes the callback. A call's work ends when the method returned, so a
/// completion is answered only then.
final class DelegateCalls: Sendable {
    private let executor = QueueExecutor(label: "BADownloadManager.delegate")
    /// The calls' queue, made at the first call: most transports (an extension's, an app without a delegate) never
    /// have one, and need no task waiting.
    private let calls = Mutex<AsyncStream<@Sendable () async -> Void>.Continuation?>(nil)

    deinit { calls.withLock { $0?.finish() } }

    /// [any thread] Runs `call` after every call posted before it has returned.
    func post(_ call: @escaping @Sendable () async -> Void) {
        let calls = self.calls.withLock { calls in
            if let calls { return calls }
            let (stream, made) = AsyncStream<@Sendable () async -> Void>.makeStream()
            Task(executorPreference: executor) {
                for await call in stream { await call() }
            }
            calls = made
            return made
        }
        calls.yield(call)
    }

    /// [any thread] Runs `call` beside the others: for a call whose answer may wait long (a challenge's credentials),
    /// which must not hold back the events and completions behind it.
    func postBeside(_ call: @escaping @Sendable () async -> Void) {
        Task(executorPreference: executor) { await call() }
    }
}

/// Runs a task's nonisolated jobs on one serial queue.
private final class QueueExecutor: TaskExecutor {
    private let queue: DispatchQueue

    init(label: String) { queue = DispatchQueue(label: label) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
