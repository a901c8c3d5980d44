/* ba/download.h: a download, as both sides describe it (Apple's BADownload / BAURLDownload). */
#ifndef BA_DOWNLOAD_H
#define BA_DOWNLOAD_H

#include <stdbool.h>
#include <stdint.h>

/* Apple's BADownload.State, same raw values. */
typedef enum ba_download_state {
    BA_DOWNLOAD_STATE_FAILED = -1,
    BA_DOWNLOAD_STATE_CREATED = 0,
    BA_DOWNLOAD_STATE_WAITING = 1,
    BA_DOWNLOAD_STATE_DOWNLOADING = 2,
    BA_DOWNLOAD_STATE_FINISHED = 3,
} ba_download_state_t;

/* Apple's BADownload.Priority is an extensible integer whose bounds Apple does not publish; these are ours.
 * Priority orders downloads within one app only. */
#define BA_DOWNLOAD_PRIORITY_MIN 0
#define BA_DOWNLOAD_PRIORITY_DEFAULT 50
#define BA_DOWNLOAD_PRIORITY_MAX 100

/* What the download fetches. The manifest named by the app's BAManifestURL is a download of kind MANIFEST:
 * it reaches the extension only through download_failed, never as a BAURLDownload (Apple's behaviour). */
typedef enum ba_download_kind {
    BA_DOWNLOAD_KIND_URL = 0,
    BA_DOWNLOAD_KIND_MANIFEST = 1,
} ba_download_kind_t;

/* Networks a download may use (since 1.2): Apple's URLRequest.allowsExpensiveNetworkAccess and
 * allowsConstrainedNetworkAccess, stated as what the download avoids so that zero, and a 1.1 struct without the
 * field, mean Apple's default (both allowed). bahost reads "expensive" as NetworkManager's metered (yes or
 * guess-yes: a phone's hotspot, mobile broadband) and "constrained" as a connection the user marked metered
 * (docs/DOWNLOADS.md, "Metered networks"). */
typedef enum ba_network_access {
    BA_NETWORK_ACCESS_AVOIDS_EXPENSIVE = 1u << 0,   /* allowsExpensiveNetworkAccess = false */
    BA_NETWORK_ACCESS_AVOIDS_CONSTRAINED = 1u << 1, /* allowsConstrainedNetworkAccess = false */
} ba_network_access_t;

/* A download. Every pointer is borrowed: it stays valid only for the duration of the call that passes it, and
 * the receiver copies what it keeps. Strings are NUL-terminated UTF-8. */
typedef struct ba_download {
    uint32_t struct_size;                   /* sizeof(ba_download_t) as the filler compiled it */
    int32_t kind;                           /* ba_download_kind_t */
    const char *identifier;                 /* client-defined; unique within the app; required */
    const char *unique_identifier;          /* system-provided; NULL on a download the extension or app creates */
    const char *url;                        /* https (plain http only to loopback when the host allows it) */
    const char *application_group_identifier; /* the app group the finished file is stored for; required */
    int64_t file_size;                      /* exact bytes on the wire; 0 = unknown (non-essential only) */
    int64_t priority;                       /* BA_DOWNLOAD_PRIORITY_MIN ... BA_DOWNLOAD_PRIORITY_MAX */
    int32_t state;                          /* ba_download_state_t; ignored when the extension creates one */
    bool essential;                         /* may only be returned for install or update content requests */
    const char *sha256;                     /* bahost addition: expected SHA-256, 64 hex digits, or NULL */
    const char *const *http_headers;        /* "Name: value" request headers, or NULL */
    uint32_t http_header_count;
    /* 1.2. Eight bytes at offset 88, past 1.1's tail padding, so that struct_size tells a 1.1 struct from this. */
    uint64_t network_access;                /* ba_network_access_t bits; 0 = any network, as Apple's default */
} ba_download_t;

/* Called once for each current download; the download is borrowed for the duration of the call. */
typedef void (*ba_download_visitor_t)(void *context, const ba_download_t *download);

#endif
