/* Returns 100,001 downloads, one more than a window may: the host stops the window as a protocol violation naming the
 * limit and keeps none of them. */
#include "common.h"

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info;
    char identifier[32];
    for (int i = 0; i <= 100000; i++) {
        snprintf(identifier, sizeof identifier, "asset-%d", i);
        ba_download_t d = valid_download(identifier);
        if (!sink->add(sink, &d)) return;
    }
    say("returned 100001 downloads");
}
