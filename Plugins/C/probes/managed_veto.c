/* A managed extension in C (ABI 1.1): vetoes every asset pack whose ID starts with "skip-", logging each question
 * with the pack's version, size and userInfo, and lets the host download the rest. */
#include <ba/ba.h>
#include <stdio.h>
#include <string.h>

static const ba_host_t *host;

static bool should_download_asset_pack(const ba_extension_t *ext, const ba_asset_pack_t *pack) {
    (void)ext;
    bool answer = strncmp(pack->id, "skip-", 5) != 0;
    char line[512];
    snprintf(line, sizeof line, "asked about %s version %lld (%lld bytes, userInfo %s): %s", pack->id,
             (long long)pack->version, (long long)pack->download_size,
             pack->user_info_json ? pack->user_info_json : "none", answer ? "yes" : "no");
    host->log(host, BA_LOG_INFO, line);
    return answer;
}

static const ba_extension_t extension = {.struct_size = sizeof extension,
                                         .should_download_asset_pack = should_download_asset_pack};

static const ba_extension_t *init(const ba_host_t *h) {
    host = h;
    return &extension;
}

static const ba_entry_t entry = {
    .struct_size = sizeof entry, .abi_version = BA_ABI_VERSION, .identifier = "probe.managed-veto", .init = init};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
