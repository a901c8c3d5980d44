/* Floods the host with log messages and output that has no newline. With the manifest "forever" it never stops:
 * the host must still keep its deadline. With "lines" it prints lines of 16 KiB, the longest the host keeps, until
 * it is stopped: the host must free what it drops as it goes. With "order" it prints a line, then logs a message
 * that names it, 700 times: the host must keep each printed line before the message logged after it (the messages
 * travel in batches, the printed lines at once). Otherwise it writes a fixed burst (40 KiB without a
 * newline, then 10,500 log lines) and returns: the host must keep a bounded log and say what it dropped. */
#include "common.h"
#include <string.h>
#include <unistd.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info, (void)sink;
    char mode[16] = "";
    FILE *manifest = fopen(manifest_path, "r");
    if (manifest) {
        if (!fgets(mode, sizeof mode, manifest)) mode[0] = 0;
        fclose(manifest);
    }
    char noise[4096];
    memset(noise, 'x', sizeof noise);
    if (strncmp(mode, "lines", 5) == 0) {
        static char line[16 * 1024];
        memset(line, 'l', sizeof line - 1);
        line[sizeof line - 1] = '\n';
        for (;;)
            if (write(1, line, sizeof line) < 0) return;
    }
    if (strncmp(mode, "order", 5) == 0) {
        for (int i = 0; i < 700; i++) {
            char printed[32], logged[160];
            int length = snprintf(printed, sizeof printed, "printed %d\n", i);
            if (write(1, printed, (size_t)length) < 0) return;
            /* Long enough that the runner fills a batch before the end. */
            snprintf(logged, sizeof logged, "logged %d %0140d", i, 0);
            host->log(host, BA_LOG_DEBUG, logged);
        }
        return;
    }
    if (strncmp(mode, "forever", 7) == 0) {
        for (;;) {
            host->log(host, BA_LOG_DEBUG, "flood");
            if (write(1, noise, sizeof noise) < 0) return;
        }
    }
    for (int i = 0; i < 10; i++)
        if (write(1, noise, sizeof noise) < 0) return;
    for (int i = 0; i < 10500; i++) host->log(host, BA_LOG_DEBUG, "flood");
}
