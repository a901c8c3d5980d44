/* Shared by the misbehaving extensions: each defines MISBEHAVE_* hooks, this file supplies the rest of a valid
 * extension so that every file shows only its one misbehaviour. */
#include <ba/ba.h>
#include <stdio.h>

static const ba_host_t *host;

static void say(const char *message) { host->log(host, BA_LOG_INFO, message); }

__attribute__((unused)) static ba_download_t valid_download(const char *identifier) {
    return (ba_download_t){
        .struct_size = sizeof(ba_download_t),
        .identifier = identifier,
        .url = "https://assets.example.com/a.pack",
        .application_group_identifier = "group.com.example.levels",
        .file_size = 1024,
        .priority = BA_DOWNLOAD_PRIORITY_DEFAULT,
    };
}

static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink);
static void will_terminate(const ba_extension_t *ext);
#ifndef MISBEHAVE_WILL_TERMINATE
static void will_terminate(const ba_extension_t *ext) {
    (void)ext;
    say("willTerminate called");
}
#endif

static const ba_extension_t extension = {
    .struct_size = sizeof extension,
    .downloads_for_request = downloads_for_request,
    .will_terminate = will_terminate,
};

static const ba_extension_t *init(const ba_host_t *h) {
    host = h;
    return &extension;
}

#ifndef MISBEHAVE_ABI_MAJOR
#define MISBEHAVE_ABI_MAJOR BA_ABI_VERSION_MAJOR
#endif

static const ba_entry_t entry = {
    .struct_size = sizeof entry,
    .abi_version = {MISBEHAVE_ABI_MAJOR, 0},
    .identifier = "com.example.misbehaving",
    .init = init,
};

#ifndef MISBEHAVE_NO_ENTRY
BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
#endif
