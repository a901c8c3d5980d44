/* Logs what the host says of itself in its table: "NAME VERSION ABI MAJOR.MINOR". */
#include <ba/ba.h>
#include <stdio.h>

static const ba_host_t *host;

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)manifest_path, (void)info, (void)sink;
    char line[256];
    snprintf(line, sizeof line, "%s %s ABI %u.%u", host->name, host->version, host->abi_version.major,
             host->abi_version.minor);
    host->log(host, BA_LOG_INFO, line);
}

static const ba_extension_t extension = {.struct_size = sizeof extension, .downloads_for_request = downloads_for_request};

static const ba_extension_t *init(const ba_host_t *h) {
    host = h;
    return &extension;
}

static const ba_entry_t entry = {
    .struct_size = sizeof entry, .abi_version = BA_ABI_VERSION, .identifier = "probe.host-identity", .init = init};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
