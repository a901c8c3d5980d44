/* Forks four children that each take 48 MiB, 8 MiB at a time, and keep it; the extension itself stays small. The
 * window's memory limit (128 MiB) holds for the window as a whole: it must end killed for memory, with a peak over
 * the limit, long before its budget, whichever process holds the memory. */
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static void take_memory(void) {
    prctl(PR_SET_NAME, "ba-memory-child");
    for (int step = 0; step < 6; step++) {
        char *block = malloc(8 << 20);
        if (block) memset(block, 1, 8 << 20);
        struct timespec pause_time = {0, 20 * 1000 * 1000};
        nanosleep(&pause_time, NULL);
    }
    for (;;) pause();
}

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    for (int i = 0; i < 4; i++)
        if (fork() == 0) take_memory();
    say("four children take 48 MiB each");
    sleep(10);
    say("still alive after 10 s");
}
