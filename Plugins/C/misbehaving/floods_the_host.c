/* Logs and prints as fast as it can, forever, without a newline on stdout: the host must still keep its deadline
 * and its memory. */
#include "common.h"
#include <string.h>
#include <unistd.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    char noise[4096];
    memset(noise, 'x', sizeof noise);
    for (;;) {
        host->log(host, BA_LOG_DEBUG, "flood");
        if (write(1, noise, sizeof noise) < 0) return;
    }
}
