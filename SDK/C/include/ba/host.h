/* ba/host.h: what the host offers the extension (Apple's BADownloadManager, as seen from inside an extension).
 *
 * Every function is a request to the host process and may block until it answers. Each returns false and fills
 * *error (when error is not NULL) on failure; error codes are Apple's (ba/error.h). */
#ifndef BA_HOST_H
#define BA_HOST_H

#include "download.h"
#include "error.h"
#include "version.h"

typedef enum ba_log_level {
    BA_LOG_DEBUG = 0,
    BA_LOG_INFO = 1,
    BA_LOG_WARNING = 2,
    BA_LOG_ERROR = 3,
} ba_log_level_t;

typedef struct ba_host ba_host_t;

struct ba_host {
    uint32_t struct_size;     /* sizeof(ba_host_t) as the host compiled it: check before using a newer field */
    ba_version_t abi_version; /* the host's ABI version */
    const char *name;         /* "bahost" */
    const char *version;      /* the host's release, e.g. "0.1.0" */
    void *host_data;          /* the host's own; the extension must not touch it */

    /* [any thread] Writes one line to the window's log. `level` is a ba_log_level_t. */
    void (*log)(const ba_host_t *host, int32_t level, const char *message);

    /* [any thread] Apple's scheduleDownload(_:). Fails with BA_ERROR_CALL_FROM_EXTENSION_NOT_ALLOWED while
     * downloads_for_request is running (return downloads from it instead), with
     * BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED for an identifier that is queued, and with the policy codes. */
    bool (*schedule_download)(const ba_host_t *host, const ba_download_t *download, ba_error_t *error);

    /* [any thread] Apple's startForegroundDownload(_:): always fails in an extension with
     * BA_ERROR_CALL_FROM_EXTENSION_NOT_ALLOWED. Present so that shared code gets Apple's answer. */
    bool (*start_foreground_download)(const ba_host_t *host, const ba_download_t *download, ba_error_t *error);

    /* [any thread] Apple's cancel(_:). Matches on unique_identifier when set, else on identifier.
     * Fails with BA_ERROR_DOWNLOAD_NOT_SCHEDULED when nothing matches. */
    bool (*cancel_download)(const ba_host_t *host, const ba_download_t *download, ba_error_t *error);

    /* [any thread] Apple's fetchCurrentDownloads(): calls visit once per scheduled or in-flight download of this
     * app, on the calling thread, before it returns. */
    bool (*fetch_current_downloads)(const ba_host_t *host, ba_download_visitor_t visit, void *context,
                                    ba_error_t *error);

    /* [any thread] Apple's withExclusiveControl: an inter-process lock shared by the app and its extension.
     * timeout_ms < 0 waits as long as the window lasts, 0 tries once, > 0 waits at most that long; when the lock
     * stays held elsewhere it fails with domain "NSPOSIXErrorDomain" and code EWOULDBLOCK.
     * While the lock is held the window stays open (Apple keeps the extension running until the handler
     * returns); it is released by release_exclusive_control or when the window ends. */
    bool (*acquire_exclusive_control)(const ba_host_t *host, int64_t timeout_ms, ba_error_t *error);

    /* [any thread] Releases what acquire_exclusive_control took. Releasing a lock not held does nothing. */
    void (*release_exclusive_control)(const ba_host_t *host);
};

#endif
