/* Adds a download, logs, then dereferences NULL inside downloads_for_request: the download must not be scheduled,
 * since the call never returned, and the message logged just before the crash must still reach the host. */
#include "common.h"

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info;
    ba_download_t added = valid_download("added-before-the-crash");
    sink->add(sink, &added);
    say("about to dereference NULL");
    volatile int *nowhere = NULL;
    *nowhere = 42;
}
