#define _GNU_SOURCE
#include <malloc.h>
#include "host_support.h"
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct window_start {
    const char *path;
    char *const *argv;
    char *const *envp;
    int channel_fd, output_fd;
    const int *cgroup_files; /* the cgroups' files the child joins by writing "0": itself */
    int cgroup_count;
    int go;          /* read end: one byte once the parent has placed us (maps written, cgroups joined) */
    int go_writer;   /* its write end, which the child closes so that a parent that gives up means EOF */
    int exec_status; /* write end, close-on-exec: EOF tells the parent that execve succeeded, else errno */
};

/* Runs in the child, on its own stack and in the parent's memory (CLONE_VM), until execve: system calls only. */
static int window_child(void *argument) {
    struct window_start *start = argument;
    char byte;
    int error = 0;
    close(start->go_writer);
    /* Above 4, so that the descriptors dup2'd to 0-3 below cannot land on it. */
    int exec_status = fcntl(start->exec_status, F_DUPFD_CLOEXEC, 5);
    if (exec_status < 0) {
        error = errno;
        ssize_t ignored = write(start->exec_status, &error, sizeof error);
        (void)ignored;
        _exit(127);
    }
    /* Until the parent has placed us (in a new user namespace we are no one until our maps exist; in the window's
     * cgroups, before any of the extension's code runs), wait. */
    if (read(start->go, &byte, 1) != 1) error = EIO;
    /* The child moves itself, a single thread, into the window's cgroups: a task that moves itself skips the
     * kernel's threadgroup lock, whose write side waits for an RCU grace period when the parent moves the child
     * (docs/performance/DECISIONS.md #41). */
    for (int i = 0; !error && i < start->cgroup_count; i++)
        if (write(start->cgroup_files[i], "0", 1) != 1) error = errno;
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (!error && (null < 0 || dup2(null, 0) < 0 || dup2(start->output_fd, 1) < 0 || dup2(start->output_fd, 2) < 0
                   || dup2(start->channel_fd, 3) < 0))
        error = errno;
    if (!error) {
        /* Keep only 0-3 and the status pipe (close-on-exec) past execve. */
        close_range(4, (unsigned)exec_status - 1, 0);
        close_range((unsigned)exec_status + 1, ~0U, 0);
        setpgid(0, 0);
        struct sigaction defaults = {.sa_handler = SIG_DFL};
        sigaction(SIGPIPE, &defaults, NULL);
        sigaction(SIGCHLD, &defaults, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(start->path, start->argv, start->envp);
        error = errno;
    }
    ssize_t ignored = write(exec_status, &error, sizeof error);
    (void)ignored;
    _exit(127);
}

static int write_file(pid_t pid, const char *name, const char *text) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    ssize_t length = (ssize_t)strlen(text);
    int error = write(fd, text, (size_t)length) == length ? 0 : errno;
    close(fd);
    return error;
}

int bahost_spawn_window(const char *path, char *const argv[], char *const envp[], int channel_fd, int output_fd,
                        int isolated, const int *cgroup_files, int cgroup_count, pid_t *pid) {
    int go[2], status[2];
    if (pipe2(go, O_CLOEXEC) != 0) return errno;
    if (pipe2(status, O_CLOEXEC) != 0) {
        int error = errno;
        close(go[0]), close(go[1]);
        return error;
    }
    struct window_start start = {
        path, argv, envp, channel_fd, output_fd, cgroup_files, cgroup_count, go[0], go[1], status[1]};
    const size_t stack_size = 64 * 1024;
    char *stack = malloc(stack_size);
    int error = stack ? 0 : ENOMEM;
    pid_t child = -1;
    if (!error) {
        /* No signal handler of ours may run in the child before execve: block them all around the clone. */
        sigset_t all, previous;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &previous);
        int flags = CLONE_VM | SIGCHLD | (isolated ? CLONE_NEWUSER | CLONE_NEWPID : 0);
        child = clone(window_child, stack + stack_size, flags, &start);
        if (child < 0) error = errno;
        pthread_sigmask(SIG_SETMASK, &previous, NULL);
    }
    close(go[0]);
    close(status[1]);
    if (!error && isolated) {
        char map[64];
        snprintf(map, sizeof map, "%u %u 1\n", (unsigned)geteuid(), (unsigned)geteuid());
        error = write_file(child, "setgroups", "deny");
        if (!error) error = write_file(child, "uid_map", map);
        snprintf(map, sizeof map, "%u %u 1\n", (unsigned)getegid(), (unsigned)getegid());
        if (!error) error = write_file(child, "gid_map", map);
    }
    if (!error && write(go[1], "", 1) != 1) error = errno;
    close(go[1]); /* a child still waiting reads EOF and gives up */
    if (child > 0) {
        /* The child shares our memory until execve: wait until it has happened (EOF) or failed (its errno). */
        int child_error = 0;
        ssize_t got;
        do got = read(status[0], &child_error, sizeof child_error);
        while (got < 0 && errno == EINTR);
        if (got == (ssize_t)sizeof child_error && !error) error = child_error;
        if (error) {
            while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
        } else {
            *pid = child;
        }
    }
    close(status[0]);
    free(stack);
    return error;
}

int bahost_same_pid_namespace(pid_t pid) {
    char path[64];
    struct stat theirs, ours;
    snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)pid);
    if (stat(path, &theirs) != 0 || stat("/proc/self/ns/pid", &ours) != 0) return -1;
    return theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino;
}

static int exit_at_once(void *argument) {
    (void)argument;
    _exit(0);
}

int bahost_user_namespaces(void) {
    /* The child's stack, in this frame (not static: callers may probe from several threads at once). */
    char stack[16 * 1024];
    pid_t child = clone(exit_at_once, stack + sizeof stack, CLONE_VM | CLONE_NEWUSER | CLONE_NEWPID | SIGCHLD, NULL);
    if (child < 0) return errno;
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
    return 0;
}

void bahost_name_thread(const char *name) {
    char kept[16];
    snprintf(kept, sizeof kept, "%s", name);
    pthread_setname_np(pthread_self(), kept);
}

int bahost_landlock_abi(void) {
#ifdef SYS_landlock_create_ruleset
    return (int)syscall(SYS_landlock_create_ruleset, NULL, 0, 1U /* LANDLOCK_CREATE_RULESET_VERSION */);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int bahost_wake_pipe(int ends[2]) { return pipe2(ends, O_CLOEXEC | O_NONBLOCK); }

int bahost_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

int bahost_poll(struct pollfd *fds, nfds_t count, int64_t timeout_ns) {
    if (timeout_ns < 0) return ppoll(fds, count, NULL, NULL);
    struct timespec timeout = {.tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000};
    return ppoll(fds, count, &timeout, NULL);
}

int64_t bahost_resident_bytes(pid_t pid) {
    char path[64], text[128];
    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return -1;
    text[n] = 0;
    long long size = 0, resident = 0;
    if (sscanf(text, "%lld %lld", &size, &resident) != 2) return -1;
    return (int64_t)resident * sysconf(_SC_PAGESIZE);
}

int bahost_namespace_members(pid_t init, pid_t *members, int capacity) {
    char path[64];
    struct stat namespace, other;
    snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)init);
    if (stat(path, &namespace) != 0) return -1;
    DIR *proc = opendir("/proc");
    if (!proc) return -1;
    int count = 0;
    for (struct dirent *entry; (entry = readdir(proc)) && count < capacity;) {
        char *end;
        long pid = strtol(entry->d_name, &end, 10);
        if (*end || pid <= 0) continue;
        snprintf(path, sizeof path, "/proc/%ld/ns/pid", pid);
        if (stat(path, &other) == 0 && other.st_dev == namespace.st_dev && other.st_ino == namespace.st_ino)
            members[count++] = (pid_t)pid;
    }
    closedir(proc);
    return count;
}

int bahost_try_reap(pid_t pid, int *status) {
    pid_t reaped;
    do reaped = waitpid(pid, status, WNOHANG);
    while (reaped < 0 && errno == EINTR);
    return reaped > 0 ? 1 : reaped;
}

void bahost_kill_group(pid_t pgid) {
    kill(-pgid, SIGKILL);
    /* Members that are our children (the runner, and orphans reparented to us as subreaper) die at once under
     * SIGKILL; reap them so that none stays a zombie. */
    for (;;) {
        pid_t reaped = waitpid(-pgid, NULL, 0);
        if (reaped < 0 && errno == EINTR) continue;
        if (reaped <= 0) break;
    }
}

int bahost_become_subreaper(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1); }

int bahost_exited(int status) { return WIFEXITED(status); }
int bahost_exit_code(int status) { return WEXITSTATUS(status); }
int bahost_signaled(int status) { return WIFSIGNALED(status); }
int bahost_signal(int status) { return WTERMSIG(status); }

int bahost_peer_credentials(int fd, pid_t *pid, uid_t *uid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return errno;
    *pid = credentials.pid;
    *uid = credentials.uid;
    return 0;
}

void bahost_write_behind(int fd, int64_t *written_back, int64_t length, bool finished) {
    int64_t pending = length - *written_back;
    if (pending <= 0 || (pending < BAHOST_WRITEBACK_STEP && !finished)) return;
    (void)sync_file_range(fd, *written_back, pending, SYNC_FILE_RANGE_WRITE);
    *written_back = length;
}

void bahost_release_free_memory(void) { malloc_trim(0); }

void bahost_tune_heap_for_service(int arenas) {
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
    mallopt(M_ARENA_MAX, arenas);
}

int bahost_exchange(const char *a, const char *b) {
    return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0 ? 0 : errno;
}

int bahost_sync_file_system(int fd) { return syncfs(fd) == 0 ? 0 : errno; }
