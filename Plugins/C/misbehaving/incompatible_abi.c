/* Declares ABI 2.0, which this host (1.x) does not speak. */
#define MISBEHAVE_ABI_MAJOR 2u
#include "common.h"

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
}
