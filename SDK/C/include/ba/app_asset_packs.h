/* ba/app_asset_packs.h: an app's managed asset packs in C (Apple's AssetPackManager), for an app whose Info.plist
 * sets BAHasManagedAssetPacks. Same rules as ba/app.h, which it extends: a connected ba_app_t, struct_size first,
 * false and *error on failure, [brackets] for the thread rule. Errors about packs and their files are Apple's
 * BAManagedErrorDomain: BA_MANAGED_ERROR_ASSET_PACK_NOT_FOUND for an ID the server does not offer,
 * BA_MANAGED_ERROR_FILE_NOT_FOUND for a path that is in no installed pack (or leaves the packs' namespace).
 *
 * Calls marked "blocks" wait for the service (ba_app_asset_pack_status) or for a server (the manifest, updates):
 * call them off a game's frame loop. ba_app_ensure_asset_pack returns at once; its progress arrives as status
 * updates and its end as a callback, both delivered like the delegate's callbacks (ba_app_dispatch in
 * BA_APP_CALLBACKS_ON_DISPATCH mode). */
#ifndef BA_APP_ASSET_PACKS_H
#define BA_APP_ASSET_PACKS_H

#include "app.h"
#include "asset_pack.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Apple's BAManagedErrorCode, in this domain. */
#define BA_MANAGED_ERROR_DOMAIN "BAManagedErrorDomain"
typedef enum ba_managed_error_code {
    BA_MANAGED_ERROR_ASSET_PACK_NOT_FOUND = 0,
    BA_MANAGED_ERROR_FILE_NOT_FOUND = 1,
    BA_MANAGED_ERROR_LOCAL_AVAILABILITY_FAILURE = 2, /* some of several packs could not be made available */
} ba_managed_error_code_t;

/* Called once for each pack; the pack is borrowed for the call. */
typedef void (*ba_asset_pack_visitor_t)(void *context, const ba_asset_pack_t *pack);

/* [any thread; blocks] Apple's manifest.assetPacks: every pack the server offers to this app, in ID order. */
bool ba_app_asset_packs(ba_app_t *app, ba_asset_pack_visitor_t visit, void *context, ba_error_t *error);

/* [any thread; blocks] Apple's assetPack(withID:): calls visit once with the pack. */
bool ba_app_asset_pack(ba_app_t *app, const char *id, ba_asset_pack_visitor_t visit, void *context, ba_error_t *error);

/* [any thread; blocks] Apple's status(relativeTo:): *status is a combination of ba_asset_pack_status_t bits. */
bool ba_app_asset_pack_status(ba_app_t *app, const char *id, int64_t *status, ba_error_t *error);

/* [any thread] Apple's localStatus(ofAssetPackWithID:): BA_ASSET_PACK_DOWNLOADED when a version is on the device,
 * else 0 (also for an unknown handle). Reads the device only. */
int64_t ba_app_asset_pack_local_status(ba_app_t *app, const char *id);

/* [any thread] Apple's assetPackIsAvailableLocally(withID:). Reads the device only. */
bool ba_app_asset_pack_is_available_locally(ba_app_t *app, const char *id);

/* Apple's AssetPackManager.DownloadStatusUpdate cases. */
typedef enum ba_asset_pack_update_kind {
    BA_ASSET_PACK_UPDATE_BEGAN = 0,
    BA_ASSET_PACK_UPDATE_PAUSED = 1,
    BA_ASSET_PACK_UPDATE_DOWNLOADING = 2, /* completed and total are set */
    BA_ASSET_PACK_UPDATE_FINISHED = 3,    /* the pack is installed: its files can be read */
    BA_ASSET_PACK_UPDATE_FAILED = 4,      /* error is set */
} ba_asset_pack_update_kind_t;

/* One status update, borrowed for the callback. */
typedef struct ba_asset_pack_update {
    uint32_t struct_size;
    int32_t kind; /* ba_asset_pack_update_kind_t */
    const ba_asset_pack_t *pack;
    int64_t completed; /* bytes, for BA_ASSET_PACK_UPDATE_DOWNLOADING */
    int64_t total;
    const ba_error_t *error; /* for BA_ASSET_PACK_UPDATE_FAILED; else NULL */
} ba_asset_pack_update_t;

typedef void (*ba_asset_pack_update_handler_t)(void *context, const ba_asset_pack_update_t *update);

/* [any thread] Apple's statusUpdates: every pack's updates, in the order they happened, as callbacks, until
 * replaced or cleared (NULL handler) or the app disconnects. */
bool ba_app_set_asset_pack_observer(ba_app_t *app, ba_asset_pack_update_handler_t handler, void *context,
                                    ba_error_t *error);

/* error is NULL when the pack is available locally. id is borrowed for the call. The pack's last status update may
 * arrive just before or just after this. */
typedef void (*ba_asset_pack_completion_t)(void *context, const char *id, const ba_error_t *error);

/* [any thread; returns at once] Apple's ensureLocalAvailability(of:requireLatestVersion:): downloads the pack
 * unless a version (with require_latest, the newest) is on the device, then calls done as a callback. Fails at once
 * only for a bad handle or a NULL done; an unknown ID reaches done as BA_MANAGED_ERROR_ASSET_PACK_NOT_FOUND. */
bool ba_app_ensure_asset_pack(ba_app_t *app, const char *id, bool require_latest, ba_asset_pack_completion_t done,
                              void *context, ba_error_t *error);

/* [any thread; blocks for a round trip] Cancels the pack's download (Apple's progress.cancel() on a status update):
 * its ensure and its status updates end failed, and nothing new is installed. */
bool ba_app_cancel_asset_pack_download(ba_app_t *app, const char *id, ba_error_t *error);

/* Called once for each ID; borrowed for the call. */
typedef void (*ba_asset_pack_id_visitor_t)(void *context, const char *id);

/* [any thread; blocks] Apple's checkForUpdates(): updates outdated packs and removes obsolete ones; calls updating
 * and removed (either may be NULL) once per ID. */
bool ba_app_check_for_asset_pack_updates(ba_app_t *app, ba_asset_pack_id_visitor_t updating,
                                         ba_asset_pack_id_visitor_t removed, void *context, ba_error_t *error);

/* [any thread; blocks] Apple's remove(assetPackWithID:). */
bool ba_app_remove_asset_pack(ba_app_t *app, const char *id, ba_error_t *error);

/* [any thread] Apple's contents(at:searchingInAssetPackWithID:): the file at path in the packs' shared namespace
 * (pack_id NULL) or in one pack. *data is the library's allocation, freed with ba_app_free; *size its bytes. */
bool ba_app_asset_pack_contents(ba_app_t *app, const char *path, const char *pack_id, void **data, size_t *size,
                                ba_error_t *error);

/* [any thread] Apple's contents(at:asLocalizedFor:): the file in the packs localized for language (a BCP-47 tag;
 * "fr" serves "fr-CA"). Freed with ba_app_free. */
bool ba_app_asset_pack_localized_contents(ba_app_t *app, const char *path, const char *language, void **data,
                                          size_t *size, ba_error_t *error);

/* [any thread] Apple's descriptor(for:searchingInAssetPackWithID:): an open, read-only, close-on-exec descriptor
 * of the file; the caller closes it. -1 and *error on failure. */
int ba_app_asset_pack_open(ba_app_t *app, const char *path, const char *pack_id, ba_error_t *error);

/* [any thread] Apple's url(for:): the path of the item at path in the namespace, copied into buffer (a folder
 * several packs hold comes back merged, in a folder private to this process). ERANGE and *length as
 * ba_app_container_path. */
bool ba_app_asset_pack_path(ba_app_t *app, const char *path, char *buffer, size_t size, size_t *length,
                            ba_error_t *error);

/* Which of the packs' languages ba_app_asset_pack_language reads. */
typedef enum ba_asset_pack_language {
    BA_ASSET_PACK_LANGUAGE_PRIMARY = 0,  /* the manifest's primary language */
    BA_ASSET_PACK_LANGUAGE_RESOLVED = 1, /* the one the app's localized packs follow (Apple's resolvedLanguage) */
} ba_asset_pack_language_t;

/* [any thread; blocks] The language as a BCP-47 tag copied into buffer ("" when there is none). ERANGE and *length
 * as ba_app_container_path. */
bool ba_app_asset_pack_language(ba_app_t *app, int32_t which, char *buffer, size_t size, size_t *length,
                                ba_error_t *error);

/* Which languages ba_app_asset_pack_languages lists. */
typedef enum ba_asset_pack_languages {
    BA_ASSET_PACK_LANGUAGES_AVAILABLE = 0, /* those the server's localized packs offer (Apple's availableLanguages) */
    BA_ASSET_PACK_LANGUAGES_LOCAL = 1,     /* those of the localized packs on the device (locallyAvailableLanguages) */
} ba_asset_pack_languages_t;

/* Called once for each language, a BCP-47 tag borrowed for the call. */
typedef void (*ba_asset_pack_language_visitor_t)(void *context, const char *language);

/* [any thread; blocks for BA_ASSET_PACK_LANGUAGES_AVAILABLE] Calls visit once for each language of `which`, in
 * order. */
bool ba_app_asset_pack_languages(ba_app_t *app, int32_t which, ba_asset_pack_language_visitor_t visit, void *context,
                                 ba_error_t *error);

/* [any thread; blocks] Sets resolvedLanguage (a BCP-47 tag; NULL: the user's languages). Downloads nothing itself. */
bool ba_app_set_asset_pack_language(ba_app_t *app, const char *language, ba_error_t *error);

/* [any thread; blocks] Apple's reconcilePreferredLanguages(). */
bool ba_app_reconcile_asset_pack_languages(ba_app_t *app, ba_error_t *error);

#ifdef __cplusplus
}
#endif

#endif
