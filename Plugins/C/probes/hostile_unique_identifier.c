/* Returns two downloads of the manifest's URL with unique identifiers chosen to hurt: one that climbs out of any
 * folder it is joined to, and the same again on a second download. The host must keep every file inside its data
 * root and give the second download an identifier of its own. Manifest: URL SIZE. */
#include <ba/ba.h>
#include <stdio.h>

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info;
    char url[1024];
    long long size = 0;
    FILE *manifest = fopen(manifest_path, "r");
    if (!manifest) return;
    int fields = fscanf(manifest, "%1023s %lld", url, &size);
    fclose(manifest);
    if (fields != 2) return;
    const char *identifiers[] = {"first", "second"};
    for (int i = 0; i < 2; i++) {
        ba_download_t d = {.struct_size = sizeof d, .identifier = identifiers[i],
                           .unique_identifier = "../../../../escaped", .url = url,
                           .application_group_identifier = "group.com.example.levels", .file_size = size};
        sink->add(sink, &d);
    }
}

static const ba_extension_t extension = {.struct_size = sizeof extension, .downloads_for_request = downloads_for_request};
static const ba_extension_t *init(const ba_host_t *h) {
    (void)h;
    return &extension;
}
static const ba_entry_t entry = {
    .struct_size = sizeof entry, .abi_version = BA_ABI_VERSION, .identifier = "probe.hostile", .init = init};
BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
