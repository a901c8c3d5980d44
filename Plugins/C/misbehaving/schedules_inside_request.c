/* Calls schedule_download from inside downloads_for_request, which Apple forbids; then returns one download
 * properly. The host must refuse the call (code 50) and keep the returned download. */
#include "common.h"

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info;
    ba_download_t sneaky = valid_download("sneaky");
    ba_error_t error = {.struct_size = sizeof error};
    if (!host->schedule_download(host, &sneaky, &error)) {
        char message[700];
        snprintf(message, sizeof message, "schedule refused: %lld %s", (long long)error.code, error.message);
        say(message);
    }
    ba_download_t returned = valid_download("returned");
    sink->add(sink, &returned);
}
