/* Never returns from downloads_for_request: the window must deliver willTerminate anyway, then kill it. */
#include "common.h"
#include <unistd.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    say("stuck in downloads_for_request");
    for (;;) pause();
}
