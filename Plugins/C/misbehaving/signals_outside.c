/* Tries to signal a process outside its window: the manifest holds a pid (the test's victim). Logs the errno. */
#include "common.h"
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info, (void)sink;
    FILE *manifest = fopen(manifest_path, "r");
    long victim = 0;
    if (!manifest || fscanf(manifest, "%ld", &victim) != 1) {
        say("no victim in the manifest");
        if (manifest) fclose(manifest);
        return;
    }
    fclose(manifest);
    char line[256];
    int result = kill((pid_t)victim, SIGKILL);
    snprintf(line, sizeof line, "kill %ld: %s", victim, result == 0 ? "done" : strerror(errno));
    say(line);
}
