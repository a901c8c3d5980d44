/* Returns downloads of the manifest's URL with unique identifiers chosen to hurt: one that climbs out of any folder
 * it is joined to, the same again on a second download, and two as long as the host accepts (1,024 bytes) that
 * differ only in their last byte, each far past a file name's 255 bytes once percent-encoded. The host must keep
 * every file inside its data root, give the second download an identifier of its own, and fetch and deliver the
 * long ones each in a file of its own. Manifest: URL SIZE. */
#include "probe_support.h"

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info;
    char url[1024], long_ones[2][1025];
    long long size = 0;
    if (!read_url_and_size(manifest_path, url, &size)) return;
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 1024; j += 2) long_ones[i][j] = '.', long_ones[i][j + 1] = 'a';
        long_ones[i][1023] = (char)('0' + i);
        long_ones[i][1024] = 0;
    }
    const char *identifiers[] = {"first", "second", "long-1", "long-2"};
    const char *unique[] = {"../../../../escaped", "../../../../escaped", long_ones[0], long_ones[1]};
    for (int i = 0; i < 4; i++) {
        ba_download_t d = {.struct_size = sizeof d, .identifier = identifiers[i], .unique_identifier = unique[i],
                           .url = url, .application_group_identifier = "group.com.example.levels",
                           .file_size = size};
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
