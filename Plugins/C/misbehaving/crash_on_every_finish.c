/* Crashes in every download_finished and download_failed it gets: the host must try each completion a bounded number
 * of times, then give it up (and delete its file) rather than wake the extension for it forever. */
#include <ba/ba.h>
#include <stdlib.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
}

static void download_finished(const ba_extension_t *ext, const ba_download_t *download, const char *file_path) {
    (void)ext, (void)download, (void)file_path;
    abort();
}

static void download_failed(const ba_extension_t *ext, const ba_download_t *download, const ba_error_t *error) {
    (void)ext, (void)download, (void)error;
    abort();
}

static const ba_extension_t extension = {.struct_size = sizeof extension,
                                         .downloads_for_request = downloads_for_request,
                                         .download_finished = download_finished,
                                         .download_failed = download_failed};

static const ba_extension_t *init(const ba_host_t *h) {
    (void)h;
    return &extension;
}

static const ba_entry_t entry = {.struct_size = sizeof entry, .abi_version = BA_ABI_VERSION,
                                 .identifier = "misbehaving.crash-on-every-finish", .init = init};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
