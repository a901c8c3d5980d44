/* An asset-downloader extension in plain C against SDK/C/include/ba/ba.h.
 * Build: cc -shared -fPIC -I SDK/C/include -o example_extension.so Plugins/C/example_extension.c
 *
 * Its manifest is text, one asset a line: IDENTIFIER SIZE essential|optional[,avoids-expensive][,avoids-constrained]
 * URL [SHA256]; '#' starts a comment. The avoids- words are Apple's allowsExpensiveNetworkAccess and
 * allowsConstrainedNetworkAccess set to false (ABI 1.2).
 * For install and update it returns every asset; for other requests only the optional ones (essential downloads
 * are only allowed at install and update). */
#include <ba/ba.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define APP_GROUP "group.com.example.levels"

static const ba_host_t *host;

static void say(ba_log_level_t level, const char *message) { host->log(host, level, message); }

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
    (void)ext;
    (void)info;
    FILE *manifest = fopen(manifest_path, "r");
    if (!manifest) {
        say(BA_LOG_ERROR, "cannot open the manifest");
        return;
    }
    char line[4096], identifier[256], necessity[64], url[2048], sha256[80], message[512];
    long long size;
    bool install_or_update = request == BA_CONTENT_REQUEST_INSTALL || request == BA_CONTENT_REQUEST_UPDATE;
    while (fgets(line, sizeof line, manifest)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        sha256[0] = 0;
        int fields = sscanf(line, "%255s %lld %63s %2047s %79s", identifier, &size, necessity, url, sha256);
        if (fields < 4) continue;
        uint64_t network_access = 0;
        for (char *word = strchr(necessity, ','); word; word = strchr(word + 1, ',')) {
            if (strncmp(word + 1, "avoids-expensive", 16) == 0) network_access |= BA_NETWORK_ACCESS_AVOIDS_EXPENSIVE;
            if (strncmp(word + 1, "avoids-constrained", 18) == 0) network_access |= BA_NETWORK_ACCESS_AVOIDS_CONSTRAINED;
        }
        bool essential = strncmp(necessity, "essential", 9) == 0 && (necessity[9] == 0 || necessity[9] == ',');
        if (essential && !install_or_update) continue;
        ba_download_t download = {
            .struct_size = sizeof download,
            .kind = BA_DOWNLOAD_KIND_URL,
            .identifier = identifier,
            .url = url,
            .application_group_identifier = APP_GROUP,
            .file_size = size,
            .priority = essential ? BA_DOWNLOAD_PRIORITY_MAX : BA_DOWNLOAD_PRIORITY_DEFAULT,
            .essential = essential,
            .sha256 = fields == 5 ? sha256 : NULL,
            .network_access = network_access,
        };
        if (sink->add(sink, &download)) {
            snprintf(message, sizeof message, "requesting %s (%lld bytes)", identifier, size);
            say(BA_LOG_INFO, message);
        }
    }
    fclose(manifest);
}

/* The file must be moved before this returns, or the host deletes it: keep it in the app group's container,
 * which the host names in BAHOST_APP_GROUP_CONTAINER, under Assets/IDENTIFIER. */
static void download_finished(const ba_extension_t *ext, const ba_download_t *download, const char *file_path) {
    (void)ext;
    char message[4096], assets[2048], destination[3072];
    const char *container = getenv("BAHOST_APP_GROUP_CONTAINER");
    if (!container || strchr(download->identifier, '/')) {
        snprintf(message, sizeof message, "%s finished, but there is nowhere to keep it", download->identifier);
        say(BA_LOG_WARNING, message);
        return;
    }
    snprintf(assets, sizeof assets, "%s/Assets", container);
    mkdir(assets, 0700);
    snprintf(destination, sizeof destination, "%s/%s", assets, download->identifier);
    if (rename(file_path, destination) == 0) snprintf(message, sizeof message, "kept %s at %s", download->identifier, destination);
    else snprintf(message, sizeof message, "cannot keep %s at %s", download->identifier, destination);
    say(BA_LOG_INFO, message);
}

static void download_failed(const ba_extension_t *ext, const ba_download_t *download, const ba_error_t *error) {
    (void)ext;
    char message[1024];
    snprintf(message, sizeof message, "%s failed: %s %lld: %s", download->identifier, error->domain,
             (long long)error->code, error->message);
    say(BA_LOG_WARNING, message);
    if (download->kind == BA_DOWNLOAD_KIND_URL && download->essential) {
        /* Apple's advice: retry a failed essential download as a non-essential one. */
        ba_download_t retry = *download;
        retry.essential = false;
        ba_error_t schedule_error = {.struct_size = sizeof schedule_error};
        if (!host->schedule_download(host, &retry, &schedule_error)) say(BA_LOG_ERROR, schedule_error.message);
    }
}

static void will_terminate(const ba_extension_t *ext) {
    (void)ext;
    say(BA_LOG_INFO, "extensionWillTerminate");
}

static const ba_extension_t extension = {
    .struct_size = sizeof extension,
    .downloads_for_request = downloads_for_request,
    .download_failed = download_failed,
    .download_finished = download_finished,
    .will_terminate = will_terminate,
};

static const ba_extension_t *init(const ba_host_t *h) {
    host = h;
    return &extension;
}

static const ba_entry_t entry = {
    .struct_size = sizeof entry,
    .abi_version = BA_ABI_VERSION,
    .identifier = "com.example.levels.c-extension",
    .init = init,
};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
