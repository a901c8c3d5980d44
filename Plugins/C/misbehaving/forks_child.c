/* Forks a child that sleeps forever under the name "ba-forked-child", logs that it did, and returns normally. The
 * host must not wait for the child (which holds the window's socket and pipe open), and must not leave it running. */
#include "common.h"
#include <sys/prctl.h>
#include <unistd.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    pid_t child = fork();
    if (child == 0) {
        prctl(PR_SET_NAME, "ba-forked-child");
        for (;;) pause();
    }
    say(child > 0 ? "forked ba-forked-child" : "fork failed");
}
