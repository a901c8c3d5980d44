/* Pins the 1.x layout: a change that moves a field of a published struct fails to compile here. Fields may only
 * be appended, and each appended field gets a line below. (x86_64 and aarch64 Linux: LP64.) */
#include "ba/app.h"
#include "ba/app_asset_packs.h"
#include "ba/ba.h"
#include <stddef.h>

#define PIN(type, field, offset) _Static_assert(offsetof(type, field) == (offset), #type "." #field " moved")

PIN(ba_version_t, minor, 4);
PIN(ba_error_t, code, 8);
PIN(ba_error_t, domain, 16);
PIN(ba_error_t, message, 80);
PIN(ba_download_t, identifier, 8);
PIN(ba_download_t, unique_identifier, 16);
PIN(ba_download_t, url, 24);
PIN(ba_download_t, application_group_identifier, 32);
PIN(ba_download_t, file_size, 40);
PIN(ba_download_t, priority, 48);
PIN(ba_download_t, state, 56);
PIN(ba_download_t, essential, 60);
PIN(ba_download_t, sha256, 64);
PIN(ba_download_t, http_headers, 72);
PIN(ba_download_t, http_header_count, 80);
PIN(ba_host_t, abi_version, 4);
PIN(ba_host_t, name, 16);
PIN(ba_host_t, host_data, 32);
PIN(ba_host_t, log, 40);
PIN(ba_host_t, release_exclusive_control, 88);
PIN(ba_app_extension_info_t, restricted_essential_download_size_remaining, 16);
PIN(ba_download_sink_t, add, 16);
PIN(ba_extension_t, downloads_for_request, 16);
PIN(ba_extension_t, will_terminate, 48);
PIN(ba_extension_t, should_download_asset_pack, 56);
PIN(ba_asset_pack_t, id, 8);
PIN(ba_asset_pack_t, user_info_json, 32);
PIN(ba_entry_t, abi_version, 4);
PIN(ba_entry_t, identifier, 16);
PIN(ba_entry_t, init, 24);

/* The app's side (ba/app.h), 1.0. The library refuses a struct smaller than its 1.0 size: those sizes are pinned too
 * (SDK/Swift/CLibrary reads them as numbers). */
PIN(ba_app_options_t, callback_mode, 4);
PIN(ba_app_options_t, app_identifier, 8);
PIN(ba_app_options_t, socket_path, 16);
_Static_assert(sizeof(ba_app_options_t) == 24, "ba_app_options_t's 1.0 size changed");
PIN(ba_app_delegate_t, context, 8);
PIN(ba_app_delegate_t, download_did_begin, 16);
PIN(ba_app_delegate_t, download_did_pause, 24);
PIN(ba_app_delegate_t, download_did_write, 32);
PIN(ba_app_delegate_t, download_did_receive_challenge, 40);
PIN(ba_app_delegate_t, download_failed, 48);
PIN(ba_app_delegate_t, download_finished, 56);
_Static_assert(sizeof(ba_app_delegate_t) == 64, "ba_app_delegate_t's 1.0 size changed");
_Static_assert(offsetof(ba_download_t, network_access) == 88, "ba_download_t's 1.0 size changed");
/* 1.1 */
PIN(ba_download_list_t, download_size, 4);
PIN(ba_download_list_t, count, 8);
PIN(ba_download_list_t, downloads, 16);
PIN(ba_download_list_t, strings, 24);
PIN(ba_download_list_t, strings_size, 32);
_Static_assert(sizeof(ba_download_list_t) == 40, "ba_download_list_t's 1.1 size changed");
PIN(ba_asset_pack_update_t, kind, 4);
PIN(ba_asset_pack_update_t, pack, 8);
PIN(ba_asset_pack_update_t, completed, 16);
PIN(ba_asset_pack_update_t, total, 24);
PIN(ba_asset_pack_update_t, error, 32);
/* 1.2 */
PIN(ba_download_t, network_access, 88);
_Static_assert(sizeof(ba_download_t) == 96, "ba_download_t's 1.2 size changed");
