/* sandbox.c: what the window's process may do, fixed before the extension's code is loaded (its constructors run
 * in dlopen). The host made this process the init of a PID namespace of its own (CHostSupport's
 * bahost_spawn_window), so nothing it starts outlives it; here it gives up the rest:
 *   - a mount namespace with a /proc of its own PID namespace: no other process of the user is visible;
 *   - no new privileges (setuid binaries do not elevate), no core dumps;
 *   - limits: open files, processes (in its namespace), the size of a file it writes;
 *   - files, with Landlock: read and execute what loading needs (system folders, the extension's folder and the
 *     folders its RUNPATH names), read the few files of /etc a loader and a TLS stack need (not /etc itself), read
 *     the manifests of this window, read and write its app group's container and the folders of the files it is
 *     handed; nothing else, the user's home and other apps' containers included;
 *   - Landlock's scoping (ABI 6): no signal to a process outside the window, no abstract Unix socket outside it.
 * The network stays open, as Apple's extensions have it. What was applied, and what the kernel could not give, goes
 * to the host as one line (BA_WIRE_SANDBOX) that the window's report shows. BAHOST_SANDBOX=off skips all of it. */
#define _GNU_SOURCE
#include "runner.h"
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Landlock's ABI, declared here rather than taken from <linux/landlock.h>: the build machine's header may be older
 * than the kernel the runner meets, and every right below is only asked for when the kernel's ABI has it. */
struct sandbox_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};
struct sandbox_path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

#define FS_EXECUTE (1ULL << 0)
#define FS_WRITE_FILE (1ULL << 1)
#define FS_READ_FILE (1ULL << 2)
#define FS_READ_DIR (1ULL << 3)
#define FS_REMOVE_DIR (1ULL << 4)
#define FS_REMOVE_FILE (1ULL << 5)
#define FS_MAKE_CHAR (1ULL << 6)
#define FS_MAKE_DIR (1ULL << 7)
#define FS_MAKE_REG (1ULL << 8)
#define FS_MAKE_SOCK (1ULL << 9)
#define FS_MAKE_FIFO (1ULL << 10)
#define FS_MAKE_BLOCK (1ULL << 11)
#define FS_MAKE_SYM (1ULL << 12)
#define FS_REFER (1ULL << 13)    /* ABI 2 */
#define FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#define FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */
#define CREATE_RULESET_VERSION (1U << 0)
#define RULE_PATH_BENEATH 1

#define READ_ONLY (FS_EXECUTE | FS_READ_FILE | FS_READ_DIR)
#define READ_DATA (FS_READ_FILE | FS_READ_DIR)
#define READ_WRITE                                                                                                  \
    (FS_WRITE_FILE | FS_READ_FILE | FS_READ_DIR | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_DIR | FS_MAKE_REG |         \
     FS_MAKE_SYM | FS_REFER | FS_TRUNCATE)
#define FILE_RIGHTS (FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV)

/* The limits a window's process runs under. */
#define SANDBOX_OPEN_FILES 256
#define SANDBOX_PROCESSES 64
#define SANDBOX_FILE_BYTES (4ULL << 30)

static const char *const system_read_only[] = {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin"};
/* Of /etc, only what a dynamic loader, a TLS stack, name resolution, time zones and the C library's user and locale
 * look-ups read: never all of it, which holds secrets (shadow, host keys, credentials of services) that a window
 * running as root could otherwise read. A symbolic link is followed to its target (resolv.conf into /run, say). */
static const char *const etc_read[] = {
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload",
    "/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki", "/etc/crypto-policies",
    "/etc/gnutls", "/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf",
    "/etc/services", "/etc/protocols", "/etc/networks", "/etc/localtime", "/etc/timezone", "/etc/passwd",
    "/etc/group", "/etc/os-release", "/etc/debian_version", "/etc/lsb-release", "/etc/mime.types",
    "/etc/locale.alias", "/etc/locale.conf", "/etc/default/locale", "/etc/alternatives", "/etc/fonts",
};
/* Read for what runtimes ask of the machine: the CPU count, cgroup quotas, /proc/self. */
static const char *const system_read_data[] = {"/proc", "/sys/devices/system/cpu", "/sys/fs/cgroup",
                                               "/dev/urandom", "/dev/random"};

struct ruleset {
    int fd;
    uint64_t handled;
    char skipped[512]; /* paths that could not be opened, for the report */
};

static void allow(struct ruleset *rules, const char *path, uint64_t access) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return; /* a folder this machine does not have */
    struct stat info;
    if (fstat(fd, &info) == 0 && !S_ISDIR(info.st_mode)) access &= FILE_RIGHTS;
    struct sandbox_path_beneath rule = {.allowed_access = access & rules->handled, .parent_fd = fd};
    if (syscall(SYS_landlock_add_rule, rules->fd, RULE_PATH_BENEATH, &rule, 0) != 0) {
        size_t used = strlen(rules->skipped);
        snprintf(rules->skipped + used, sizeof rules->skipped - used, "%s%s", used ? ", " : "", path);
    }
    close(fd);
}

/* Each entry of a list separated by `separators`. */
static void allow_list(struct ruleset *rules, const char *list, const char *separators, uint64_t access) {
    if (!list) return;
    char *copy = strdup(list), *save = NULL;
    if (!copy) return;
    for (char *path = strtok_r(copy, separators, &save); path; path = strtok_r(NULL, separators, &save))
        allow(rules, path, access);
    free(copy);
}

/* The folders the extension's DT_RUNPATH (or DT_RPATH) names, $ORIGIN resolved: where the dynamic loader will look
 * for its libraries (a Swift extension's runtime). ELF64 only; anything malformed adds nothing. */
static void allow_runpath(struct ruleset *rules, const char *plugin, const char *origin) {
    int fd = open(plugin, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    Elf64_Ehdr header;
    Elf64_Phdr segments[64];
    Elf64_Dyn dynamic[512];
    size_t dynamic_count = 0, segment_count = 0;
    if (pread(fd, &header, sizeof header, 0) != (ssize_t)sizeof header || memcmp(header.e_ident, ELFMAG, SELFMAG) != 0
        || header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_phentsize != sizeof(Elf64_Phdr))
        goto done;
    segment_count = header.e_phnum < 64 ? header.e_phnum : 64;
    if (pread(fd, segments, segment_count * sizeof *segments, (off_t)header.e_phoff)
        != (ssize_t)(segment_count * sizeof *segments))
        goto done;
    for (size_t i = 0; i < segment_count; i++) {
        if (segments[i].p_type != PT_DYNAMIC) continue;
        size_t size = segments[i].p_filesz < sizeof dynamic ? segments[i].p_filesz : sizeof dynamic;
        ssize_t got = pread(fd, dynamic, size, (off_t)segments[i].p_offset);
        if (got > 0) dynamic_count = (size_t)got / sizeof *dynamic;
    }
    uint64_t strtab = 0, path_offset = UINT64_MAX;
    for (size_t i = 0; i < dynamic_count && dynamic[i].d_tag != DT_NULL; i++) {
        if (dynamic[i].d_tag == DT_STRTAB) strtab = dynamic[i].d_un.d_ptr;
        if (dynamic[i].d_tag == DT_RUNPATH || (dynamic[i].d_tag == DT_RPATH && path_offset == UINT64_MAX))
            path_offset = dynamic[i].d_un.d_val;
    }
    if (!strtab || path_offset == UINT64_MAX) goto done;
    /* DT_STRTAB is an address: find the loaded segment that holds it to get its place in the file. */
    for (size_t i = 0; i < segment_count; i++) {
        const Elf64_Phdr *s = &segments[i];
        if (s->p_type != PT_LOAD || strtab < s->p_vaddr || strtab - s->p_vaddr >= s->p_filesz) continue;
        char runpath[4096];
        ssize_t got = pread(fd, runpath, sizeof runpath - 1, (off_t)(s->p_offset + (strtab - s->p_vaddr) + path_offset));
        if (got <= 0) break;
        runpath[got] = 0;
        char *save = NULL;
        for (char *entry = strtok_r(runpath, ":", &save); entry; entry = strtok_r(NULL, ":", &save)) {
            char resolved[4096];
            const char *rest = NULL;
            if (strncmp(entry, "$ORIGIN", 7) == 0) rest = entry + 7;
            else if (strncmp(entry, "${ORIGIN}", 9) == 0) rest = entry + 9;
            if (rest) snprintf(resolved, sizeof resolved, "%s%s", origin, rest);
            else snprintf(resolved, sizeof resolved, "%s", entry);
            allow(rules, resolved, READ_ONLY);
        }
        break;
    }
done:
    close(fd);
}

static void send_report(const char *text) {
    ba_wire_writer_t w;
    ba_wire_writer_init(&w, BA_WIRE_SANDBOX);
    ba_wire_put_str(&w, text);
    channel_send(&w);
}

/* Files, with Landlock; returns the report's part, or why there is none. */
static void restrict_files(const char *plugin, char *report, size_t size) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, CREATE_RULESET_VERSION);
    if (abi < 1) {
        snprintf(report, size, "files: NOT restricted (this kernel has no Landlock: %s)", strerror(errno));
        return;
    }
    struct sandbox_ruleset_attr attributes = {
        .handled_access_fs = (FS_REFER << 1) - 1, /* every right of ABI 1 and 2 */
    };
    if (abi < 2) attributes.handled_access_fs &= ~FS_REFER;
    if (abi >= 3) attributes.handled_access_fs |= FS_TRUNCATE;
    if (abi >= 5) attributes.handled_access_fs |= FS_IOCTL_DEV;
    if (abi >= 6) attributes.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL;
    /* The attribute struct grew with the ABI: pass the size this kernel knows. */
    size_t attributes_size = abi >= 6 ? sizeof attributes : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
    struct ruleset rules = {.handled = attributes.handled_access_fs};
    rules.fd = (int)syscall(SYS_landlock_create_ruleset, &attributes, attributes_size, 0);
    if (rules.fd < 0) {
        snprintf(report, size, "files: NOT restricted (Landlock refused a ruleset: %s)", strerror(errno));
        return;
    }
    for (size_t i = 0; i < sizeof system_read_only / sizeof *system_read_only; i++)
        allow(&rules, system_read_only[i], READ_ONLY);
    for (size_t i = 0; i < sizeof etc_read / sizeof *etc_read; i++) allow(&rules, etc_read[i], READ_DATA);
    for (size_t i = 0; i < sizeof system_read_data / sizeof *system_read_data; i++)
        allow(&rules, system_read_data[i], READ_DATA);
    allow(&rules, "/dev/null", FS_READ_FILE | FS_WRITE_FILE);

    char origin[4096];
    snprintf(origin, sizeof origin, "%s", plugin);
    char *slash = strrchr(origin, '/');
    if (slash) *slash = 0;
    allow(&rules, origin[0] ? origin : "/", READ_ONLY);
    allow_runpath(&rules, plugin, origin);
    allow_list(&rules, getenv("LD_LIBRARY_PATH"), ":", READ_ONLY);
    /* From the host, one path a line: this window's manifests, and the folders of the files it hands over. */
    allow_list(&rules, getenv("BAHOST_SANDBOX_READ"), "\n", READ_DATA);
    allow_list(&rules, getenv("BAHOST_SANDBOX_WRITE"), "\n", READ_WRITE);
    const char *container = getenv("BAHOST_APP_GROUP_CONTAINER");
    if (container) allow(&rules, container, READ_WRITE);

    if (syscall(SYS_landlock_restrict_self, rules.fd, 0) != 0) {
        snprintf(report, size, "files: NOT restricted (landlock_restrict_self: %s)", strerror(errno));
    } else {
        snprintf(report, size,
                 "files (Landlock ABI %ld): read system folders (of /etc only what loading, TLS and name "
                 "resolution need) and the extension's own, write %s%s%s%s; "
                 "%s",
                 abi, container ? "its app group's container only" : "nothing (no app group)",
                 rules.skipped[0] ? " (could not allow: " : "", rules.skipped, rules.skipped[0] ? ")" : "",
                 abi >= 6 ? "signals and abstract sockets: this window only"
                          : "signals and abstract sockets: NOT scoped (Landlock ABI 6 needed)");
    }
    close(rules.fd);
}

/* The host's /proc shows every process of the machine, and lets a process read the environment and command line
 * of those of its own user: an API token in a game's environment, say. In a mount namespace of its own the window
 * mounts a /proc of its PID namespace instead, which shows its own processes only. */
static void private_proc(char *report, size_t size) {
    const char *step = "unshare";
    if (unshare(CLONE_NEWNS) == 0) {
        step = "making its mounts private";
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0) {
            step = "mounting proc";
            if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0) {
                snprintf(report, size, "/proc: the window's own processes only");
                return;
            }
        }
    }
    snprintf(report, size, "/proc: NOT private (%s: %s): the user's other processes are visible", step,
             strerror(errno));
}

void sandbox_apply(const char *plugin) {
    const char *mode = getenv("BAHOST_SANDBOX");
    if (mode && strcmp(mode, "off") == 0) {
        send_report("OFF (--sandbox off): the extension has every right of the user who started bahost");
        return;
    }
    char report[2048], files[1024];
    size_t used = 0;
    /* The host made us init of a PID namespace of our own, unless the machine allows none. */
    bool isolated = getpid() == 1;
    used += (size_t)snprintf(report + used, sizeof report - used, "%s; ",
                             isolated ? "processes: a PID namespace, killed whole when the window ends"
                                      : "processes: NOT isolated (no user namespaces here): a descendant that leaves "
                                        "the process group can outlive the window");
    if (isolated) {
        char proc[160];
        private_proc(proc, sizeof proc);
        used += (size_t)snprintf(report + used, sizeof report - used, "%s; ", proc);
    }

    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    struct rlimit none = {0, 0}, files_limit = {SANDBOX_OPEN_FILES, SANDBOX_OPEN_FILES},
                  size_limit = {SANDBOX_FILE_BYTES, SANDBOX_FILE_BYTES};
    setrlimit(RLIMIT_CORE, &none);
    setrlimit(RLIMIT_NOFILE, &files_limit);
    setrlimit(RLIMIT_FSIZE, &size_limit);
    /* A write past the limit fails with EFBIG rather than killing the writer. */
    signal(SIGXFSZ, SIG_IGN);
    /* Counted in the window's own user namespace; outside one it would count every process of the user. Linux
     * exempts root from the limit, so a host run as root has none. */
    bool limited = isolated && getuid() != 0;
    if (limited) {
        struct rlimit processes = {SANDBOX_PROCESSES, SANDBOX_PROCESSES};
        setrlimit(RLIMIT_NPROC, &processes);
    }
    char processes[64] = "processes unlimited";
    if (limited) snprintf(processes, sizeof processes, "%d processes", SANDBOX_PROCESSES);
    else if (isolated) snprintf(processes, sizeof processes, "processes unlimited (Linux exempts root)");
    used += (size_t)snprintf(report + used, sizeof report - used,
                             "limits: %d open files, %s, files of at most %llu GiB, no core dumps, no new privileges; ",
                             SANDBOX_OPEN_FILES, processes, SANDBOX_FILE_BYTES >> 30);
    /* What the host's cgroup holds the window to, root included, when the machine offers one (its own words). */
    const char *window_limits = getenv("BAHOST_WINDOW_LIMITS");
    used += (size_t)snprintf(report + used, sizeof report - used, "%.200s; ",
                             window_limits ? window_limits
                                           : "the whole window: no cgroup (memory measured by the host, no kernel "
                                             "ceiling)");
    restrict_files(plugin, files, sizeof files);
    snprintf(report + used, sizeof report - used, "%s; network: open", files);
    send_report(report);
}
