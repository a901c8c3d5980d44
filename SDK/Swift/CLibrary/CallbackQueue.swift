import AppClient
import Glibc
import Synchronization
import Vocabulary

/// Where the app's C callbacks run: one at a time, in the order they were posted, either on a thread of the
/// library's (`SerialThread`) or inside `ba_app_dispatch` on the app's own thread, woken through a pipe that the app
/// polls (libcurl's multi interface, sd-bus).
///
/// Thread rule: `post` from any thread; `dispatch` from the app's dispatching thread; `close` from any thread that is
/// not running a callback.
final class CallbackQueue: @unchecked Sendable {  // the mode and descriptor are set once; the rest is in `state`
    enum Mode { case libraryThread, dispatch }

    /// What became of a posted callback.
    enum Outcome { case ran, dropped }

    let mode: Mode
    /// Readable while callbacks wait (dispatch mode); -1 otherwise. A pipe's read end: `eventfd` would do as well,
    /// but Glibc's module does not offer it, and a pipe is what every event loop knows.
    let descriptor: Int32
    private let wakeWriter: Int32
    private let thread: SerialThread?
    private let state = Mutex(State())
    /// Held while a callback runs in dispatch mode, so that `close` can wait for it.
    private let running = Mutex(())

    private struct State {
        var waiting: [Entry] = []
        var closed = false
    }

    /// A callback and its outcome's observer. Unchecked: the closures capture the app's C pointers, which the
    /// app hands over to be called on the callback thread; each runs once, there.
    private struct Entry: @unchecked Sendable {
        let work: () -> Void
        let finished: (@Sendable (Outcome) -> Void)?
    }

    init(mode: Mode) throws {
        self.mode = mode
        if mode == .dispatch {
            var ends: [Int32] = [0, 0]
            // pipe2 is not in Glibc's module: the flags are set right after (a child the app forks in between
            // inherits the two ends, which is harmless).
            guard pipe(&ends) == 0 else { throw HostError.system("pipe") }
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, O_NONBLOCK)
            }
            (descriptor, wakeWriter) = (ends[0], ends[1])
            thread = nil
        } else {
            (descriptor, wakeWriter) = (-1, -1)
            thread = SerialThread()
        }
    }

    deinit {
        if descriptor >= 0 {
            Glibc.close(descriptor)
            Glibc.close(wakeWriter)
        }
        thread?.stop()
    }

    /// Runs `work` as a callback, later; `finished` learns whether it ran or was dropped by `close`.
    func post(_ work: @escaping () -> Void, finished: (@Sendable (Outcome) -> Void)? = nil) {
        let entry = Entry(work: work, finished: finished)
        switch mode {
        case .libraryThread:
            let accepted = state.withLock { !$0.closed }
            guard accepted else { return finished?(.dropped) ?? () }
            thread!.async { [self] in
                guard !state.withLock({ $0.closed }) else { return entry.finished?(.dropped) ?? () }
                call(entry.work)
                entry.finished?(.ran)
            }
        case .dispatch:
            let accepted = state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.waiting.append(entry)
                return true
            }
            guard accepted else { return finished?(.dropped) ?? () }
            // A full pipe is readable already: a byte that does not fit is not needed.
            var one: UInt8 = 1
            _ = write(wakeWriter, &one, 1)
        }
    }

    /// Posts `work` and blocks until it ran or was dropped.
    func run(_ work: @escaping () -> Void) -> Outcome {
        let outcome = OneShot<Outcome>()
        post(work) { outcome.give($0) }
        return outcome.wait()
    }

    /// Runs the callbacks waiting now (dispatch mode), returning how many ran.
    func dispatch() -> Int {
        var drain = [UInt8](repeating: 0, count: 512)
        while read(descriptor, &drain, drain.count) == drain.count {}
        let batch = state.withLock { state -> [Entry] in
            defer { state.waiting = [] }
            return state.closed ? [] : state.waiting
        }
        var ran = 0
        for (index, entry) in batch.enumerated() {
            let didRun = running.withLock { _ -> Bool in
                if state.withLock({ $0.closed }) { return false }
                call(entry.work)
                return true
            }
            guard didRun else {
                batch[index...].forEach { $0.finished?(.dropped) }
                break
            }
            entry.finished?(.ran)
            ran += 1
        }
        return ran
    }

    /// True on a thread while it runs one of the app's callbacks.
    static var insideCallback: Bool { pthread_getspecific(insideKey) != nil }
    /// A thread-local flag: set on a thread while it runs a callback.
    private static let insideKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private func call(_ work: () -> Void) {
        pthread_setspecific(Self.insideKey, UnsafeRawPointer(bitPattern: 1))
        work()
        pthread_setspecific(Self.insideKey, nil)
    }

    /// Drops every callback still waiting and waits for a running one to return (unless called from that callback);
    /// nothing runs afterwards.
    func close() {
        let dropped = state.withLock { state -> [Entry] in
            state.closed = true
            defer { state.waiting = [] }
            return state.waiting
        }
        dropped.forEach { $0.finished?(.dropped) }
        guard !Self.insideCallback else { return }
        switch mode {
        case .libraryThread: thread!.sync()
        case .dispatch: running.withLock { _ in }
        }
    }
}

/// One thread of the library's that runs what it is given, in order: the callbacks' thread in
/// `BA_APP_CALLBACKS_ON_LIBRARY_THREAD` mode.
final class SerialThread: @unchecked Sendable {  // safe: `pending` and `stopped` are read and written under `state`
    private let state = Mutex<(pending: [@Sendable () -> Void], stopped: Bool)>(([], false))
    private let wake = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var signalled = false

    init() {
        pthread_mutex_init(lock, nil)
        pthread_cond_init(wake, nil)
        Threads.start { [self] in run() }
    }

    /// Runs once the thread has returned (it holds the object until then).
    deinit {
        pthread_cond_destroy(wake)
        pthread_mutex_destroy(lock)
        wake.deallocate()
        lock.deallocate()
    }

    /// [any thread] Runs `work` on the thread after what was given before it.
    func async(_ work: @escaping @Sendable () -> Void) {
        state.withLock { $0.pending.append(work) }
        signal()
    }

    /// [any thread but this one] Waits until what was given before has run.
    func sync() {
        let done = OneShot<Bool>()
        async { done.give(true) }
        _ = done.wait()
    }

    /// [any thread] Ends the thread once what was given has run.
    func stop() {
        state.withLock { $0.stopped = true }
        signal()
    }

    private func signal() {
        pthread_mutex_lock(lock)
        signalled = true
        pthread_cond_signal(wake)
        pthread_mutex_unlock(lock)
    }

    private func run() {
        while true {
            let (batch, stopped) = state.withLock { state in
                defer { state.pending = [] }
                return (state.pending, state.stopped)
            }
            for work in batch { work() }
            if stopped && batch.isEmpty { return }
            pthread_mutex_lock(lock)
            while !signalled { pthread_cond_wait(wake, lock) }
            signalled = false
            pthread_mutex_unlock(lock)
        }
    }
}
