/* ba/extension.h: what the extension offers the host (Apple's BADownloaderExtension).
 *
 * Threads: entry points other than will_terminate are called one at a time, in order, on the runner's entry
 * thread. will_terminate is called on another thread and may run while an entry point is still running (that is
 * the case it exists for: the window's budget ran out). Any function pointer may be NULL: the host then does what
 * Apple's default implementation does. */
#ifndef BA_EXTENSION_H
#define BA_EXTENSION_H

#include "asset_pack.h"
#include "challenge.h"
#include "download.h"
#include "error.h"

/* Apple's BAContentRequest, same raw values. */
typedef enum ba_content_request {
    BA_CONTENT_REQUEST_INSTALL = 1,
    BA_CONTENT_REQUEST_UPDATE = 2,
    BA_CONTENT_REQUEST_PERIODIC = 3,
    BA_CONTENT_REQUEST_LANGUAGE_CHANGE = 4,
} ba_content_request_t;

/* Apple's BAAppExtensionInfo. -1 means "not restricted" (Swift's nil): the app has been launched. */
typedef struct ba_app_extension_info {
    uint32_t struct_size;
    int64_t restricted_download_size_remaining;
    int64_t restricted_essential_download_size_remaining;
} ba_app_extension_info_t;

/* Where downloads_for_request puts the downloads it returns (Apple returns a Set<BADownload>). */
typedef struct ba_download_sink ba_download_sink_t;
struct ba_download_sink {
    uint32_t struct_size;
    void *sink_data; /* the host's own */
    /* [the thread running downloads_for_request, until it returns] Copies *download into the returned set at
     * once. Returns false when the download is malformed; the window's report says why. */
    bool (*add)(const ba_download_sink_t *sink, const ba_download_t *download);
};

typedef struct ba_extension ba_extension_t;
struct ba_extension {
    uint32_t struct_size;  /* sizeof(ba_extension_t) as the extension compiled it */
    void *extension_data;  /* the extension's own */

    /* [entry thread] Apple's downloads(for:manifestURL:extensionInfo:). `request` is a ba_content_request_t.
     * manifest_path is a read-only file that is deleted when this returns. Add each download to `sink`;
     * scheduling through the host is refused while this runs. */
    void (*downloads_for_request)(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                  const ba_app_extension_info_t *info, const ba_download_sink_t *sink);

    /* [entry thread] Apple's backgroundDownload(_:failedWithError:). May reschedule through the host. */
    void (*download_failed)(const ba_extension_t *ext, const ba_download_t *download, const ba_error_t *error);

    /* [entry thread] Apple's backgroundDownload(_:finishedWithFileURL:). The file at file_path must be moved
     * before this returns, or the host deletes it. */
    void (*download_finished)(const ba_extension_t *ext, const ba_download_t *download, const char *file_path);

    /* [entry thread] Apple's backgroundDownload(_:didReceive:): a server asked for credentials for one of the app's
     * downloads (a 401 with WWW-Authenticate: Basic) and no app delegate answered. Answer through reply->complete,
     * now or later from any thread; the window stays open until it is called (or its budget ends). A credential is
     * sent to that host only, for that download; the question comes again, with previous_failure_count, when the
     * server refuses it. NULL: Apple's default, BA_CHALLENGE_PERFORM_DEFAULT_HANDLING (the download fails with the
     * 401). */
    void (*did_receive_challenge)(const ba_extension_t *ext, const ba_download_t *download,
                                  const ba_auth_challenge_t *challenge, const ba_challenge_reply_t *reply);

    /* [terminate thread, possibly while an entry point runs] Apple's extensionWillTerminate(): the budget ran
     * out; save state quickly. The process is killed when the grace period ends, whether or not this returned. */
    void (*will_terminate)(const ba_extension_t *ext);

    /* 1.1. [entry thread] Apple's ManagedDownloaderExtension.shouldDownload(_:), for an app with
     * BAHasManagedAssetPacks: called for each pack the host is about to download on its own (essential and
     * prefetch packs of an install or update, newer versions of installed packs); false leaves it. NULL, or a
     * window that ends before it returns: every pack downloads, as Apple's default does. */
    bool (*should_download_asset_pack)(const ba_extension_t *ext, const ba_asset_pack_t *pack);
};

#endif
