/* Built against a future ABI 1.9 whose extension table has grown: its struct_size is larger than this host's
 * ba_extension_t. The host must load it, use the fields it knows, and ignore the rest. */
#include <ba/ba.h>

static const ba_host_t *host;

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info;
    ba_download_t d = {.struct_size = sizeof d, .identifier = "from-1.9", .url = "https://a.example.com/x",
                       .application_group_identifier = "group.g", .file_size = 1};
    sink->add(sink, &d);
}

/* The 1.9 table: the 1.0 fields, then fields this host has never heard of. */
static const struct {
    ba_extension_t base;
    void (*added_in_1_9)(void);
    int64_t another_field;
} extension = {
    .base = {.struct_size = sizeof extension, .downloads_for_request = downloads_for_request},
    .added_in_1_9 = 0,
    .another_field = 99,
};

static const ba_extension_t *init(const ba_host_t *h) {
    host = h;
    return &extension.base;
}

static const struct {
    ba_entry_t base;
    const char *added_in_1_9;
} entry = {
    .base = {.struct_size = sizeof entry, .abi_version = {1, 9}, .identifier = "probe.newer-minor", .init = init},
    .added_in_1_9 = "unknown to this host",
};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry.base; }
