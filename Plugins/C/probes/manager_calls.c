/* Calls every host function from download_failed and logs each answer, one line per call:
 * "<call>: ok" or "<call>: <code> <message>". Tests read the lines. */
#include <ba/ba.h>
#include <stdio.h>

static const ba_host_t *host;

static void report(const char *call, bool ok, const ba_error_t *error) {
    char line[700];
    if (ok) snprintf(line, sizeof line, "%s: ok", call);
    else snprintf(line, sizeof line, "%s: %lld %s", call, (long long)error->code, error->message);
    host->log(host, BA_LOG_INFO, line);
}

static void count(void *context, const ba_download_t *download) {
    (void)download;
    ++*(int *)context;
}

static void download_failed(const ba_extension_t *ext, const ba_download_t *failed, const ba_error_t *why) {
    (void)ext, (void)why;
    ba_download_t retry = *failed;
    retry.essential = false;
    retry.unique_identifier = NULL;
    ba_error_t error = {.struct_size = sizeof error};
    report("schedule", host->schedule_download(host, &retry, &error), &error);
    report("schedule again", host->schedule_download(host, &retry, &error), &error);
    report("schedule NULL", host->schedule_download(host, NULL, &error), &error);
    report("start foreground", host->start_foreground_download(host, &retry, &error), &error);
    int downloads = 0;
    bool ok = host->fetch_current_downloads(host, count, &downloads, &error);
    char line[64];
    snprintf(line, sizeof line, "fetch: %d", downloads);
    report(line, ok, &error);
    report("cancel", host->cancel_download(host, &retry, &error), &error);
    report("cancel again", host->cancel_download(host, &retry, &error), &error);
}

static const ba_extension_t extension = {.struct_size = sizeof extension, .download_failed = download_failed};

static const ba_extension_t *init(const ba_host_t *h) {
    host = h;
    return &extension;
}

static const ba_entry_t entry = {
    .struct_size = sizeof entry, .abi_version = BA_ABI_VERSION, .identifier = "probe.manager-calls", .init = init};

BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }
