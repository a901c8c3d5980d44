/* Logs one message of 1 MiB (more than a packet to the host can hold), ending in a two-byte UTF-8 character at the
 * cut, then returns one download. The runner must cut the message, not die of it, and the download must be kept. */
#include "common.h"
#include <stdlib.h>
#include <string.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info;
    size_t size = 1 << 20;
    char *message = malloc(size + 1);
    if (!message) return;
    /* One ASCII byte, then "é" (0xC3 0xA9) over and over: an even cut point falls inside a character. */
    message[0] = 'x';
    for (size_t i = 1; i + 1 < size; i += 2) message[i] = (char)0xC3, message[i + 1] = (char)0xA9;
    message[size - 1] = 'x';
    message[size] = 0;
    host->log(host, BA_LOG_WARNING, message);
    free(message);
    say("still here");
    ba_download_t d = valid_download("kept");
    sink->add(sink, &d);
}
