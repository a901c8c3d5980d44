/* Pins the 1.x layout: a change that moves a field of a published struct fails to compile here. Fields may only
 * be appended, and each appended field gets a line below. (x86_64 and aarch64 Linux: LP64.) */
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
