/* ba/app.h: the app's side of Background Assets in C (Apple's BADownloadManager and its delegate). Include this one
 * header; link with libbackgroundassets (`pkg-config --cflags --libs backgroundassets`).
 *
 * The library talks to the user's bahost service over its socket. The app's identity is $BAHOST_APP_IDENTIFIER,
 * which `bahost launch APP -- COMMAND` sets (the app's .desktop entry runs it that way); the service accepts an
 * app only from a process that `bahost launch` started, or one of its descendants. Inside a Flatpak the identity is
 * the Flatpak's application ID and the socket the one the service keeps in $XDG_RUNTIME_DIR/app/APP_ID; the
 * sandbox proves the identity, and the app asks for no permission.
 *
 * Rules, as in the extension ABI (ba/ba.h): every struct begins with struct_size, which whoever fills it sets to
 * sizeof as they compiled it; structs only grow at the end. Functions that can fail return false and fill *error
 * (when error is not NULL; its struct_size is the room it has, 0 read as the 1.0 size) with Apple's domain and
 * code: BAErrorDomain (ba/error.h) for the manager's own refusals, NSURLErrorDomain for transport failures,
 * NSPOSIXErrorDomain for the exclusive-control lock, BAHostErrorDomain for bahost's additions (verification, and
 * misuse of this API: a NULL where something is needed, a struct too small, a buffer too small). A malformed download
 * is Apple's BA_ERROR_DOWNLOAD_INVALID, a handle that is not connected BA_ERROR_CALLER_CONNECTION_INVALID. Every
 * pointer passed to a callback is borrowed for that call. [Brackets] give each function's thread rule.
 *
 * Callbacks arrive in one of two ways, chosen at connect:
 * - BA_APP_CALLBACKS_ON_LIBRARY_THREAD: on a thread of the library's, one at a time, in the order they happened.
 * - BA_APP_CALLBACKS_ON_DISPATCH: only inside ba_app_dispatch, on the thread that calls it. ba_app_fd is a
 *   descriptor that polls readable while callbacks wait: add it to the app's own loop (poll, epoll, SDL's, a game
 *   engine's), the pattern of libcurl's multi interface and sd-bus. Nothing runs on the app's thread otherwise.
 * Either way a callback may call any function of this API except ba_app_disconnect and ba_app_dispatch.
 *
 * A host may load the library with dlopen (a scripting layer's FFI, an engine's module); dlclose then leaves it
 * loaded (it is linked -z nodelete): the Swift runtime inside it cannot be unmapped under its own threads. */
#ifndef BA_APP_H
#define BA_APP_H

#include <stddef.h>

#include "challenge.h"
#include "download.h"
#include "error.h"
#include "version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API; the library's own is ba_app_library_version(). Same rule as the extension ABI: equal
 * majors talk; a newer minor only appends. */
#define BA_APP_API_VERSION_MAJOR 1u
#define BA_APP_API_VERSION_MINOR 2u

/* A connection to the service for this app. Opaque: the library checks every handle it is given, so a handle used
 * after ba_app_disconnect fails with BA_ERROR_CALLER_CONNECTION_INVALID instead of touching freed memory. */
typedef struct ba_app ba_app_t;

typedef enum ba_app_callback_mode {
    BA_APP_CALLBACKS_ON_LIBRARY_THREAD = 0,
    BA_APP_CALLBACKS_ON_DISPATCH = 1,
} ba_app_callback_mode_t;

typedef struct ba_app_options {
    uint32_t struct_size;
    int32_t callback_mode;      /* ba_app_callback_mode_t */
    const char *app_identifier; /* NULL: $BAHOST_APP_IDENTIFIER, else the Flatpak's $FLATPAK_ID */
    const char *socket_path;    /* NULL: $BAHOST_SOCKET, else in a Flatpak $XDG_RUNTIME_DIR/app/APP_ID/bahost.sock,
                                   else $XDG_RUNTIME_DIR/bahost/service.sock */
} ba_app_options_t;

/* Apple's BADownloadManagerDelegate. Every function may be NULL, and NULL means what a Swift delegate that does
 * not implement the method means: for a completion or a challenge, the service wakes the app's extension instead.
 * context is passed back unchanged. */
typedef struct ba_app_delegate {
    uint32_t struct_size;
    void *context;
    /* A download started, or resumed after a pause. */
    void (*download_did_begin)(void *context, const ba_download_t *download);
    /* A download paused. */
    void (*download_did_pause)(void *context, const ba_download_t *download);
    /* A download made progress (at most about ten calls a second for one download). */
    void (*download_did_write)(void *context, const ba_download_t *download, int64_t bytes_written,
                               int64_t total_bytes_written, int64_t total_bytes_expected);
    /* A server asked for credentials: answer through reply->complete exactly once, now or later, from any thread,
     * but before ba_app_disconnect, which frees the reply (the service then goes on as if the app had not answered). */
    void (*download_did_receive_challenge)(void *context, const ba_download_t *download,
                                           const ba_auth_challenge_t *challenge, const ba_challenge_reply_t *reply);
    /* A download failed, with Apple's domain and code. */
    void (*download_failed)(void *context, const ba_download_t *download, const ba_error_t *error);
    /* A download finished: file_path is the file. Move it (rename) before returning, or it is deleted, as on Apple.
     * Delivery is exactly once: once this returns, the completion is the app's, and neither the app nor its
     * extension is offered it again; if the app dies before it returns, it is offered again. */
    void (*download_finished)(void *context, const ba_download_t *download, const char *file_path);
} ba_app_delegate_t;

/* [any thread] The library's API version. */
ba_version_t ba_app_library_version(void);

/* [any thread] Connects to the service as this app and introduces it. One connection at a time per process (Apple's
 * BADownloadManager.shared): a second fails with BA_ERROR_CALLER_CONNECTION_INVALID until the first is
 * disconnected. Fails with BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED (55) when the process has no app identity or the
 * service refuses it (a service of another protocol version does, naming both), and BA_ERROR_CALLER_CONNECTION_INVALID
 * (56) when the service cannot be reached. If the service restarts later, the library reconnects by itself while a
 * delegate is set, and other calls reconnect when made. */
bool ba_app_connect(const ba_app_options_t *options, ba_app_t **app, ba_error_t *error);

/* [any thread but a callback's] Clears the delegate, drops every callback still waiting without answering it (the
 * service offers each again later, or to the extension), waits for a callback that is running to return, closes
 * the connection and waits for the library's threads of it to end. The handle is invalid afterwards. NULL or an
 * unknown handle does nothing. */
void ba_app_disconnect(ba_app_t *app);

/* [any thread] Sets the delegate (copied: the struct may be freed after the call; context is kept), or clears it
 * with NULL. While a delegate is set, the app's completions come to it instead of waking the extension, for each
 * function it has. */
bool ba_app_set_delegate(ba_app_t *app, const ba_app_delegate_t *delegate, ba_error_t *error);

/* [any thread] BA_APP_CALLBACKS_ON_DISPATCH: a descriptor that polls readable (POLLIN) while callbacks wait for
 * ba_app_dispatch. Owned by the library; do not read or close it. -1 in the other mode or for an unknown handle. */
int ba_app_fd(const ba_app_t *app);

/* [the app's thread that polls ba_app_fd] Runs the callbacks waiting now, in order, on the calling thread, and
 * returns how many ran (0 when none waited); -1 for an unknown handle or in the other mode. Never blocks except in
 * the callbacks it runs. Call it from one thread at a time. */
int ba_app_dispatch(ba_app_t *app);

/* [any thread; blocks for a round trip] Apple's scheduleDownload(_:): queued, to run at the system's discretion. */
bool ba_app_schedule_download(ba_app_t *app, const ba_download_t *download, ba_error_t *error);

/* Which download a call names: the one with download->unique_identifier when it is set (a download the library
 * handed the app: fetched, or passed to a delegate function); when it is NULL (a download the app filled itself), the
 * app's scheduled or running download with download->identifier, which is unique among them. So the struct an app
 * scheduled is the one it promotes or cancels, as the object an app schedules on Apple is. */

/* [any thread; blocks for a round trip] Apple's startForegroundDownload(_:): now, or a scheduled one promoted. */
bool ba_app_start_foreground_download(ba_app_t *app, const ba_download_t *download, ba_error_t *error);

/* [any thread; blocks for a round trip] Apple's cancel(_:). Fails with BA_ERROR_DOWNLOAD_NOT_SCHEDULED (101). */
bool ba_app_cancel_download(ba_app_t *app, const ba_download_t *download, ba_error_t *error);

/* [any thread; blocks for a round trip] Apple's fetchCurrentDownloads(): calls visit once per scheduled or running
 * download of the app, on the calling thread, before it returns. */
bool ba_app_fetch_current_downloads(ba_app_t *app, ba_download_visitor_t visit, void *context, ba_error_t *error);

/* All of an app's current downloads in one allocation, made by ba_app_copy_current_downloads and freed with
 * ba_app_free. Every pointer in it, the downloads' strings and header arrays too, points inside that allocation.
 * Added in 1.1. */
typedef struct ba_download_list {
    uint32_t struct_size;           /* sizeof(ba_download_list_t) as the library compiled it */
    uint32_t download_size;         /* bytes from one download to the next: ba_download_t as the library compiled it */
    size_t count;                   /* downloads in the list */
    const ba_download_t *downloads; /* in the order ba_app_fetch_current_downloads visits them: BA_DOWNLOAD_AT */
    const char *strings;            /* every string of the downloads, NUL-terminated and back to back: for each
                                     * download in order its identifier, unique_identifier, url,
                                     * application_group_identifier and sha256, then its header lines; a string
                                     * the download leaves NULL is empty here. A binding may decode them at once
                                     * and split them at the NULs instead of reading each pointer. */
    size_t strings_size;            /* bytes in strings, every NUL included */
} ba_download_list_t;

/* The download at index i of a ba_download_list_t, whatever size of ba_download_t the library was built with. */
#define BA_DOWNLOAD_AT(list, i) \
    ((const ba_download_t *)(const void *)((const char *)(list)->downloads + (size_t)(i) * (list)->download_size))

/* [any thread; blocks for a round trip] Apple's fetchCurrentDownloads() as one copy: *list is the library's
 * allocation, freed with ba_app_free, and NULL on failure. The same downloads as ba_app_fetch_current_downloads,
 * for callers that pay more for a call per download than for the download: a binding through an FFI (Python's
 * ctypes, Lua, C#), or an app that keeps the list past the call. Added in 1.1. */
bool ba_app_copy_current_downloads(ba_app_t *app, ba_download_list_t **list, ba_error_t *error);

/* [any thread] Frees what this library allocated for the caller (ba_app_copy_current_downloads,
 * ba_app_asset_pack_contents, ba_app_asset_pack_localized_contents). NULL does nothing. */
void ba_app_free(void *data);

/* [any thread; blocks up to timeout_ms] Exclusive control between the app and its extension (Apple's
 * withExclusiveControl(before:)): timeout_ms < 0 waits as long as needed, 0 tries once. When the lock stays held
 * elsewhere it fails with NSPOSIXErrorDomain ETIMEDOUT. Held until ba_app_release_exclusive_control. */
bool ba_app_acquire_exclusive_control(ba_app_t *app, int64_t timeout_ms, ba_error_t *error);

/* [any thread] Gives up what ba_app_acquire_exclusive_control took. Releasing a lock not held does nothing. */
void ba_app_release_exclusive_control(ba_app_t *app);

/* error is NULL when control was acquired; the lock is released when the handler returns. */
typedef void (*ba_exclusive_control_handler_t)(void *context, const ba_error_t *error);

/* [any thread; returns at once] Apple's withExclusiveControl(_:) closure form: acquires the lock on a thread of the
 * library's (waiting up to timeout_ms, < 0 as long as needed), then runs handler as a callback (so in
 * BA_APP_CALLBACKS_ON_DISPATCH, inside ba_app_dispatch) with the lock held, or with the error. Fails only for a
 * bad handle or a NULL handler. */
bool ba_app_with_exclusive_control(ba_app_t *app, int64_t timeout_ms, ba_exclusive_control_handler_t handler,
                                   void *context, ba_error_t *error);

/* [any thread; blocks for a round trip] Says whether a game of the app runs (a bahost addition): while one does,
 * the person's game.while-playing setting holds or slows background downloads, as while GameMode has a client.
 * Kept across reconnections; the app's end ends it. Fails with 56 when the service is not reachable. Added in 1.2. */
bool ba_app_set_playing(ba_app_t *app, bool playing, ba_error_t *error);

/* [any thread] The folder the app group's app and extension share (Apple's
 * containerURL(forSecurityApplicationGroupIdentifier:)), as a NUL-terminated path copied into buffer. Fails with
 * BAHostErrorDomain ERANGE when buffer is too small (*length then says how many bytes it needs, NUL included), and
 * with BAHostErrorDomain ENOENT for a group that is not the app's (Apple returns nil). length may be NULL. */
bool ba_app_container_path(ba_app_t *app, const char *group_identifier, char *buffer, size_t size, size_t *length,
                           ba_error_t *error);

#ifdef __cplusplus
}
#endif

#endif
