/* Adds a download whose identifier is a megabyte long, then a good one: the runner must refuse the first naming
 * the limit (not die trying to send it), and the host must not blame the extension for exiting. */
#include "common.h"
#include <stdlib.h>
#include <string.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info;
    char *huge = malloc(1 << 20);
    if (!huge) return;
    memset(huge, 'x', (1 << 20) - 1);
    huge[(1 << 20) - 1] = 0;
    ba_download_t bad = valid_download(huge);
    sink->add(sink, &bad);
    free(huge);
}
