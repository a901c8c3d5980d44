/* Tries every way a process can outlive the window that started it, then returns: a grandchild in a session of its
 * own (setsid, double fork), one that stops itself, and one that execs another program. Each renames itself
 * (comm "ba-escapee-…", or sleep's argument 4711.25) so that a test can look for survivors by name. With the
 * window's PID namespace, the kernel kills them all when the window ends. */
#include "common.h"
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static void escape(const char *name, int how) {
    if (fork() != 0) return;
    setsid();
    if (fork() != 0) _exit(0); /* the intermediate exits: the grandchild is an orphan in its own session */
    prctl(PR_SET_NAME, name);
    if (how == 1) raise(SIGSTOP);
    if (how == 2) execl("/bin/sleep", "sleep", "4711.25", (char *)NULL);
    for (;;) pause();
}

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    escape("ba-escapee-sid", 0);
    escape("ba-escapee-stop", 1);
    escape("ba-escapee-exec", 2);
    say("three escapees started");
}
