/* Bypasses the runner and writes bytes straight into the window's socket (descriptor 3): a CALL packet cut short,
 * then a packet of a type that does not exist. The host must decode neither, and call it a protocol violation. */
#include "common.h"
#include <sys/socket.h>
#include <unistd.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    const unsigned char truncated_call[] = {5, 1, 0, 0, 0, 1, 0xff};
    const unsigned char unknown_type[] = {0xee, 1, 2, 3};
    send(3, truncated_call, sizeof truncated_call, 0);
    send(3, unknown_type, sizeof unknown_type, 0);
    pause();
}
