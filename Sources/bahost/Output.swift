import Foundation

/// What a command writes for its user: lines written whole with `write(2)`, unbuffered, so that progress shows as it
/// happens and nothing is lost when `launch` replaces the process.
///
/// Not `FileHandle.write`, which traps when a write fails: a reader that closed the pipe (`bahost run | head -1`)
/// crashed the host with a stack trace. The host ignores SIGPIPE (a window's runner may die with its socket full),
/// so a reader going away arrives here as `EPIPE`.
enum Output {
    /// Writes `text` to standard output. When its reader has gone, the command ends as a Unix tool ends on SIGPIPE:
    /// at once and silently (status 141 in a shell); what was in flight is durable, and `bahost resume` finishes it,
    /// as after Ctrl-C. Any other failure (a full disk, a closed descriptor) ends it with 74 and says why on
    /// standard error.
    static func standardOutput(_ text: String) {
        guard let failure = write(text, to: STDOUT_FILENO) else { return }
        if failure == EPIPE {
            signal(SIGPIPE, SIG_DFL)
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_UNBLOCK, &pipeSignal, nil)
            raise(SIGPIPE)
        } else {
            standardError("bahost: cannot write its output: \(String(cString: strerror(failure)))\n")
        }
        // No exit handlers: other threads are still working, and what they leave is what a kill leaves.
        _exit(failure == EPIPE ? 128 + SIGPIPE : 74)
    }

    /// Writes `text` to standard error. A failure drops it: there is nowhere left to say anything.
    static func standardError(_ text: String) {
        _ = write(text, to: STDERR_FILENO)
    }

    /// Writes all of `text`; returns the `errno` of a write that failed.
    private static func write(_ text: String, to descriptor: Int32) -> Int32? {
        var text = text
        return text.withUTF8 { bytes -> Int32? in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
    }
}
