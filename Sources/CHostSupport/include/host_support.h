/* host_support.h: the few process-control calls the host makes that Swift cannot make directly (variadic
 * syscall(), ppoll, clone, the status macros). Thin and stateless. */
#ifndef BAHOST_HOST_SUPPORT_H
#define BAHOST_HOST_SUPPORT_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Spawns `path`, a window's runner, in a new process group with `channel_fd` as descriptor 3, `output_fd` as 1 and
 * 2, /dev/null as 0, and no other descriptor. Before the child runs a single instruction of `path`, it joins the
 * cgroups whose files are open as `cgroup_files` by writing "0" to each (itself: v1's `tasks`, v2's
 * `cgroup.procs`), so that the window's limits hold from the start. With `isolated`, the child is the first process
 * (init) of a new PID namespace inside a new user namespace that maps only our uid and gid to themselves: when it
 * dies, the kernel kills every process left in the namespace, whatever it did (setsid, double forks, exec), and none
 * of them can address a process outside by its pid. Returns 0 and sets *pid, or an errno value; with `isolated`, EPERM, EINVAL, ENOSPC and EUSERS mean this
 * machine allows no such namespace (the caller may then try without). Any thread. */
int bahost_spawn_window(const char *path, char *const argv[], char *const envp[], int channel_fd, int output_fd,
                        int isolated, const int *cgroup_files, int cgroup_count, pid_t *pid);

/* 1 when `pid` is in our PID namespace, 0 when in another (an extension's window), -1 when it cannot be told. */
int bahost_same_pid_namespace(pid_t pid);

/* 0 when this machine lets us create the user and PID namespaces of an isolated window, else the errno. */
int bahost_user_namespaces(void);

/* Names the calling thread for the kernel (what ps -L, top -H and a debugger show; at most 15 bytes are kept).
 * Foundation's Thread.name reaches the kernel only when set after `start` recorded the thread, a race. */
void bahost_name_thread(const char *name);

/* The Landlock ABI version the kernel offers, or -1 with errno set when it has none (ENOSYS, EOPNOTSUPP). */
int bahost_landlock_abi(void);

/* A pipe, both ends close-on-exec and non-blocking: written to end another thread's wait on its read end. */
int bahost_wake_pipe(int ends[2]);

/* A descriptor that polls readable when `pid` exits, or -1 where the kernel has no pidfd_open. */
int bahost_pidfd_open(pid_t pid);

/* ppoll with a relative timeout in nanoseconds (< 0: no timeout). Returns what ppoll returns. */
int bahost_poll(struct pollfd *fds, nfds_t count, int64_t timeout_ns);

/* Resident memory of `pid` in bytes, from /proc/PID/statm; -1 when it cannot be read (the process is gone). */
int64_t bahost_resident_bytes(pid_t pid);

/* The processes in the PID namespace whose init is `init` (as this process sees their pids), up to `capacity`:
 * a window's processes where no cgroup gathers them. Scans /proc. Returns the count, or -1. */
int bahost_namespace_members(pid_t init, pid_t *members, int capacity);

/* Reaps `pid` if it has ended, without blocking. Returns 1 with *status set, 0 while it runs, -1 on error.
 * (No rusage: after a clone that shares our memory, ru_maxrss reports our peak, not the child's.) */
int bahost_try_reap(pid_t pid, int *status);

/* Kills process group `pgid` with SIGKILL and reaps every member that is a child of this process. */
void bahost_kill_group(pid_t pgid);

/* Makes this process the reaper of orphaned descendants, so that what a window's process leaves behind is ours
 * to reap. */
int bahost_become_subreaper(void);

/* The process and user at the other end of a connected Unix socket (SO_PEERCRED). Returns 0, or an errno value. */
int bahost_peer_credentials(int fd, pid_t *pid, uid_t *uid);

/* Write-behind, as RocksDB's bytes_per_sync: once a file written up to `length` holds BAHOST_WRITEBACK_STEP bytes
 * more than `*written_back`, or at all when `finished`, starts writing them to disk without waiting
 * (sync_file_range with SYNC_FILE_RANGE_WRITE, which Swift cannot import) and advances `*written_back`. The sync
 * that ends the file then waits for the last step only, and dirty pages do not pile up behind a fast writer. Only
 * a hint: a failure shows up, if it matters, in that sync. */
#define BAHOST_WRITEBACK_STEP ((int64_t)8 << 20)
void bahost_write_behind(int fd, int64_t *written_back, int64_t length, bool finished);

/* The status macros, which Swift cannot import. */
int bahost_exited(int status);
int bahost_exit_code(int status);
int bahost_signaled(int status);
int bahost_signal(int status);

/* Gives the heap's freed memory back to the system (glibc's malloc_trim, which Swift's Glibc module does not
 * export). Any thread. */
void bahost_release_free_memory(void);

/* Sets glibc's heap up for a long-lived service, before its threads start: a block of 256 KiB or more is mapped on
 * its own, so that freeing it gives it back to the system (glibc would otherwise raise that threshold to the
 * largest block freed, and keep later large replies in the heap), and at most `arenas` arenas, so that freed memory
 * is not spread over an arena per thread that a trim reaches only in part. */
void bahost_tune_heap_for_service(int arenas);

/* Swaps two paths on one file system in one step (renameat2 with RENAME_EXCHANGE, which Swift cannot import): a
 * reader sees one or the other, never neither. Returns 0, or an errno value. */
int bahost_exchange(const char *a, const char *b);

/* Writes every dirty page of the file system holding `fd` to disk (syncfs). Returns 0, or an errno value. */
int bahost_sync_file_system(int fd);

/* The network path (docs/DOWNLOADS.md, "Offline"). A netlink socket that hears the kernel's changes to links,
 * addresses and routes, IPv4 and IPv6: non-blocking, close-on-exec. Returns it, or -1 with errno set (a sandbox
 * without netlink: bahost then finds the network again by its probes alone). Any thread. */
int bahost_network_changes_open(void);

/* Reads every message waiting on a socket from bahost_network_changes_open; returns how many were read. */
int bahost_network_changes_drain(int fd);

/* The local address the kernel would send from to reach `peer` (a numeric IPv4 or IPv6 address) now, written to
 * `local` (at least 46 bytes). Returns 0, or an errno value: ENETUNREACH or EHOSTUNREACH when no route leads there,
 * EINVAL for an address it cannot parse. A UDP socket's connect: nothing is sent. Any thread. */
int bahost_route_source(const char *peer, char *local, size_t capacity);

/* Whether the link that holds the local `address` (numeric) is up with its carrier (IFF_UP and IFF_RUNNING): 1, 0
 * when it is not (a cable pulled at the far end, Wi-Fi lost: its routes stay but lead nowhere), -1 when no link holds
 * it. Any thread. */
int bahost_address_link_up(const char *address);

/* The local address a socket is bound to (a TCP socket still connecting has the one its route chose), written to
 * `local` (at least 46 bytes). Returns 0, or an errno value. Any thread. */
int bahost_socket_local_address(int fd, char *local, size_t capacity);

/* The kernel's estimate of a TCP connection's round trip as its receiving side sees it (TCP_INFO's tcpi_rcv_rtt,
 * measured with the timestamps the sender echoes: it grows with the queue in front of us), in microseconds, 0 when
 * the kernel has none yet; and the segment size it receives (tcpi_rcv_mss) in *segment. -1 with errno when the
 * socket has no TCP_INFO. Any thread. */
int64_t bahost_tcp_receive_rtt(int fd, uint32_t *segment);

/* Sets a socket's receive buffer (SO_RCVBUF; for TCP, the window it advertises follows it, and its autotuning
 * stops). Any thread. */
void bahost_set_receive_buffer(int fd, int bytes);

#endif
