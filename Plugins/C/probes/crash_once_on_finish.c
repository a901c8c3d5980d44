/* Crashes in the first download_finished it ever gets (it leaves a marker in its app group container first), and
 * keeps the file in every later one: the host must deliver that completion again, and then never again. */
#include "probe_support.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const ba_host_t *host;

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info;
    char url[1024];
    long long size = 0;
    if (!read_url_and_size(manifest_path, url, &size)) return;
    ba_download_t d = {.struct_size = sizeof d, .identifier = "asset", .url = url,
                       .application_group_identifier = "group.com.example.levels", .file_size = size};
    sink->add(sink, &d);
}

static void download_finished(const ba_extension_t *ext, const ba_download_t *download, const char *file_path) {
    (void)ext;
    char marker[2048];
    snprintf(marker, sizeof marker, "%s/crashed-once", getenv("BAHOST_APP_GROUP_CONTAINER"));
    if (access(marker, F_OK) != 0) {
        fclose(fopen(marker, "w"));
        abort();
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
    .struct_size = sizeof entry, .abi_version = BA_ABI_VERSION, .identifier = "probe.crash-once", .init = init};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
