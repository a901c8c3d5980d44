/* An extension from an older minor whose table ended before will_terminate: its struct_size stops short. Memory
 * after the table holds a function that must never be called. It hangs, so the window reaches its deadline: the
 * host must treat will_terminate as absent (Apple's default: nothing) rather than read past struct_size. */
#include <ba/ba.h>
#include <stddef.h>
#include <unistd.h>

static const ba_host_t *host;

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    for (;;) pause();
}

static void past_the_end(const ba_extension_t *ext) {
    (void)ext;
    host->log(host, BA_LOG_ERROR, "called a function past struct_size");
}

static const ba_extension_t extension = {
    .struct_size = offsetof(ba_extension_t, will_terminate),
    .downloads_for_request = downloads_for_request,
    .will_terminate = past_the_end,
};

static const ba_extension_t *init(const ba_host_t *h) {
    host = h;
    return &extension;
}

static const ba_entry_t entry = {
    .struct_size = sizeof entry, .abi_version = {1, 0}, .identifier = "probe.older-minor", .init = init};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
