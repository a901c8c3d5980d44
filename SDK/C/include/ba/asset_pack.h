/* ba/asset_pack.h: a managed asset pack (Apple's AssetPack) and its status, shared by the extension's and the
 * app's sides. */
#ifndef BA_ASSET_PACK_H
#define BA_ASSET_PACK_H

#include <stdint.h>

/* A managed asset pack (Apple's AssetPack), borrowed for the call. Added in 1.1. */
typedef struct ba_asset_pack {
    uint32_t struct_size;
    const char *id;
    int64_t version;
    int64_t download_size;        /* the archive's bytes on the wire */
    const char *user_info_json;   /* the pack manifest's userInfo as JSON, or NULL */
} ba_asset_pack_t;

/* Apple's AssetPack.Status option set, same raw values: a pack's status is a combination of these bits. */
typedef enum ba_asset_pack_status {
    BA_ASSET_PACK_DOWNLOAD_AVAILABLE = 1 << 0,
    BA_ASSET_PACK_UPDATE_AVAILABLE = 1 << 1,
    BA_ASSET_PACK_UP_TO_DATE = 1 << 2,
    BA_ASSET_PACK_OUT_OF_DATE = 1 << 3,
    BA_ASSET_PACK_OBSOLETE = 1 << 4,
    BA_ASSET_PACK_DOWNLOADING = 1 << 5,
    BA_ASSET_PACK_DOWNLOADED = 1 << 6,
} ba_asset_pack_status_t;

#endif
