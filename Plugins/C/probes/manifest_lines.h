/* The probes' manifest format: lines "ID URL SIZE", each one download in the app group the tests use. */
#ifndef PROBES_MANIFEST_LINES_H
#define PROBES_MANIFEST_LINES_H

#include <ba/ba.h>
#include <stdio.h>

/* Adds a download to `sink` for each line of the manifest. */
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

#endif
