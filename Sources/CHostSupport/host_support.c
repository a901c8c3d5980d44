#define _GNU_SOURCE
#include <malloc.h>
#include "host_support.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int bahost_spawn(const char *path, char *const argv[], char *const envp[], int channel_fd, int output_fd,
                 pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, output_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, output_fd, 2);
    posix_spawn_file_actions_adddup2(&actions, channel_fd, 3);
    posix_spawn_file_actions_addclosefrom_np(&actions, 4);

    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGCHLD);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    int error = posix_spawn(pid, path, &actions, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    return error;
}

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

int bahost_start_writeback(int fd, int64_t offset, int64_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE) == 0 ? 0 : errno;
}

void bahost_release_free_memory(void) { malloc_trim(0); }

int bahost_exchange(const char *a, const char *b) {
    return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0 ? 0 : errno;
}

int bahost_sync_file_system(int fd) { return syncfs(fd) == 0 ? 0 : errno; }
