/* A perfectly good extension that forgot to export ba_extension_entry. */
#define MISBEHAVE_NO_ENTRY
#include "common.h"

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
}

/* Keeps the entry referenced so the compiler does not warn that it is unused. */
const ba_entry_t *forgotten_entry(void) { return &entry; }
