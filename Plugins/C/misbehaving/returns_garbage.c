/* Adds a download whose struct is garbage (a struct_size no ba_download_t has, then nonsense after it). */
#include "common.h"
#include <string.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info;
    ba_download_t fine = valid_download("fine");
    sink->add(sink, &fine);
    static unsigned char garbage[sizeof(ba_download_t)];
    memset(garbage, 0xA5, sizeof garbage);
    sink->add(sink, (const ba_download_t *)garbage);
}
