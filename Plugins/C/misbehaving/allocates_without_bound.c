/* Allocates and touches memory until something stops it. */
#include "common.h"
#include <stdlib.h>
#include <string.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    for (;;) {
        char *block = malloc(1 << 20);
        if (block) memset(block, 1, 1 << 20);
    }
}
