/* Adds a download whose identifier is not UTF-8: the host must call it garbage, not crash on it. */
#include "common.h"

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info;
    ba_download_t bad = valid_download("\xff\xfe not text");
    sink->add(sink, &bad);
}
