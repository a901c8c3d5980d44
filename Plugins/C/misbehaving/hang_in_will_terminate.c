/* Hangs in downloads_for_request, and then in will_terminate too: killed when the grace period ends. */
#define MISBEHAVE_WILL_TERMINATE
#include "common.h"
#include <unistd.h>

static void will_terminate(const ba_extension_t *ext) {
    (void)ext;
    say("willTerminate called; hanging in it");
    for (;;) pause();
}

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    for (;;) pause();
}
