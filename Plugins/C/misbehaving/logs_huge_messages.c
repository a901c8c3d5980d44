/* Logs 2,000 messages of 200 KB each (400 MB in all) as fast as it can, then returns one download. The host's memory
 * for the window's log must stay what the report keeps, whatever the size and rate of the messages. */
#include "common.h"
#include <stdlib.h>
#include <string.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info;
    size_t size = 200 * 1000;
    char *message = malloc(size + 1);
    if (!message) return;
    memset(message, 'm', size);
    message[size] = 0;
    for (int i = 0; i < 2000; i++) host->log(host, BA_LOG_INFO, message);
    free(message);
    ba_download_t d = valid_download("after-the-flood");
    sink->add(sink, &d);
}
