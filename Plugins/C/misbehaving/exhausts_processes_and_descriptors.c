/* Opens descriptors and forks sleeping children until the window's limits stop each, and logs where and why:
 * "descriptors: N, then Too many open files", "processes: N, then Resource temporarily unavailable". */
#include "common.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    char line[256];
    int descriptors = 0, error = 0;
    for (; descriptors < 100000; descriptors++) {
        if (open("/dev/null", O_RDONLY) < 0) {
            error = errno;
            break;
        }
    }
    snprintf(line, sizeof line, "descriptors: %d, then %s", descriptors, strerror(error));
    say(line);
    int processes = 0;
    error = 0;
    for (; processes < 200; processes++) { /* a bound in case no limit applies */
        pid_t child = fork();
        if (child == 0) {
            for (;;) pause();
        }
        if (child < 0) {
            error = errno;
            break;
        }
    }
    snprintf(line, sizeof line, "processes: %d, then %s", processes, error ? strerror(error) : "no limit");
    say(line);
}
