/* What several probes share: their manifest formats, and keeping a finished file in the app group's container. */
#ifndef PROBES_PROBE_SUPPORT_H
#define PROBES_PROBE_SUPPORT_H

#include <ba/ba.h>
#include <stdio.h>
#include <stdlib.h>

/* Adds a download to `sink` for each line of the manifest: "ID URL SIZE", in the app group the tests use. */
static inline void add_manifest_lines(const char *manifest_path, const ba_download_sink_t *sink) {
    char identifier[128], url[1024];
    long long size = 0;
    FILE *manifest = fopen(manifest_path, "r");
    if (!manifest) return;
    while (fscanf(manifest, "%127s %1023s %lld", identifier, url, &size) == 3) {
        ba_download_t d = {.struct_size = sizeof d, .identifier = identifier, .url = url,
                           .application_group_identifier = "group.com.example.levels", .file_size = size};
        sink->add(sink, &d);
    }
    fclose(manifest);
}

/* Reads a manifest of one line, "URL SIZE", into `url` (1,024 bytes) and `size`; false when it does not hold one. */
static inline int read_url_and_size(const char *manifest_path, char url[1024], long long *size) {
    FILE *manifest = fopen(manifest_path, "r");
    if (!manifest) return 0;
    int fields = fscanf(manifest, "%1023s %lld", url, size);
    fclose(manifest);
    return fields == 2;
}

/* Moves the finished file into the app group's container, named after the download, and logs "kept ID". */
static inline void keep_in_container(const ba_host_t *host, const ba_download_t *download, const char *file_path) {
    char path[2048], line[2200];
    snprintf(path, sizeof path, "%s/%s", getenv("BAHOST_APP_GROUP_CONTAINER"), download->identifier);
    rename(file_path, path);
    snprintf(line, sizeof line, "kept %s", download->identifier);
    host->log(host, BA_LOG_INFO, line);
}

#endif
