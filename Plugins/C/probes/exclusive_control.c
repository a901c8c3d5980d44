/* In downloads_for_request, asks for exclusive control with the timeout the manifest holds (milliseconds), logs
 * "acquired" or "refused: <code>", holds it for 200 ms, and releases it. */
#include <ba/ba.h>
#include <stdio.h>
#include <time.h>

static const ba_host_t *host;

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext, (void)request, (void)info, (void)sink;
    long long timeout_ms = 0;
    FILE *manifest = fopen(manifest_path, "r");
    if (manifest) {
        if (fscanf(manifest, "%lld", &timeout_ms) != 1) timeout_ms = 0;
        fclose(manifest);
    }
    ba_error_t error = {.struct_size = sizeof error};
    if (!host->acquire_exclusive_control(host, timeout_ms, &error)) {
        char line[600];
        snprintf(line, sizeof line, "refused: %lld %s", (long long)error.code, error.domain);
        host->log(host, BA_LOG_INFO, line);
        return;
    }
    host->log(host, BA_LOG_INFO, "acquired");
    nanosleep(&(struct timespec){.tv_nsec = 200 * 1000 * 1000}, NULL);
    host->release_exclusive_control(host);
}

static const ba_extension_t extension = {.struct_size = sizeof extension, .downloads_for_request = downloads_for_request};

static const ba_extension_t *init(const ba_host_t *h) {
    host = h;
    return &extension;
}

static const ba_entry_t entry = {
    .struct_size = sizeof entry, .abi_version = BA_ABI_VERSION, .identifier = "probe.exclusive-control", .init = init};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
