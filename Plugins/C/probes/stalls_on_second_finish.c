/* Records every download_finished it enters (a line "entered ID" in $CONTAINER/entries), and stalls 60 s in the
 * first call for "second" (a marker in the container says it did): a host killed meanwhile must deliver "first",
 * whose call returned, never again, and "second", whose call never returned, once more.
 * Its manifest holds lines "ID URL SIZE". */
#include "probe_support.h"
#include <ba/ba.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const ba_host_t *host;

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info;
    add_manifest_lines(manifest_path, sink);
}

static void download_finished(const ba_extension_t *ext, const ba_download_t *download, const char *file_path) {
    (void)ext;
    char path[2048];
    const char *container = getenv("BAHOST_APP_GROUP_CONTAINER");
    snprintf(path, sizeof path, "%s/entries", container);
    FILE *entries = fopen(path, "a");
    if (entries) {
        fprintf(entries, "entered %s\n", download->identifier);
        fclose(entries);
    }
    snprintf(path, sizeof path, "%s/stalled-once", container);
    if (strcmp(download->identifier, "second") == 0 && access(path, F_OK) != 0) {
        fclose(fopen(path, "w"));
        sleep(60);
    }
    keep_in_container(host, download, file_path);
}

static const ba_extension_t extension = {.struct_size = sizeof extension,
                                         .downloads_for_request = downloads_for_request,
                                         .download_finished = download_finished};

static const ba_extension_t *init(const ba_host_t *h) {
    host = h;
    return &extension;
}

static const ba_entry_t entry = {
    .struct_size = sizeof entry, .abi_version = BA_ABI_VERSION, .identifier = "probe.stalls-on-second", .init = init};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
