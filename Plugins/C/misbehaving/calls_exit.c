/* Ends its own process with exit(3) in the middle of downloads_for_request. */
#include "common.h"
#include <stdlib.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    exit(3);
}
