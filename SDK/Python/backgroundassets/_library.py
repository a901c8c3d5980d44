"""The C library (ba/app.h, ba/app_asset_packs.h) through ctypes: its structs and functions, declared once."""

import ctypes
import ctypes.util
import os

c_bool, c_char_p, c_int, c_int32, c_int64, c_uint32, c_void_p, c_size_t = (
    ctypes.c_bool, ctypes.c_char_p, ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint32,
    ctypes.c_void_p, ctypes.c_size_t)


class Version(ctypes.Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class Error(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("code", c_int64), ("domain", ctypes.c_char * 64),
                ("message", ctypes.c_char * 512)]

    @classmethod
    def empty(cls):
        error = cls()
        error.struct_size = ctypes.sizeof(cls)
        return error


NETWORK_ACCESS_AVOIDS_EXPENSIVE = 1 << 0
NETWORK_ACCESS_AVOIDS_CONSTRAINED = 1 << 1
DOWNLOAD_SIZE_1_1 = 88  # ba_download_t before network_access


class Download(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("kind", c_int32), ("identifier", c_char_p),
                ("unique_identifier", c_char_p), ("url", c_char_p), ("application_group_identifier", c_char_p),
                ("file_size", c_int64), ("priority", c_int64), ("state", c_int32), ("essential", c_bool),
                ("sha256", c_char_p), ("http_headers", ctypes.POINTER(c_char_p)), ("http_header_count", c_uint32),
                ("network_access", ctypes.c_uint64)]  # 1.2


class DownloadList(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("download_size", c_uint32), ("count", c_size_t),
                ("downloads", c_void_p), ("strings", c_void_p), ("strings_size", c_size_t)]


class Challenge(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("host", c_char_p), ("port", c_int32), ("protocol", c_char_p),
                ("realm", c_char_p), ("authentication_method", c_char_p), ("previous_failure_count", c_int32)]


class ChallengeReply(ctypes.Structure):
    pass


ChallengeComplete = ctypes.CFUNCTYPE(None, ctypes.POINTER(ChallengeReply), c_int32, c_char_p, c_char_p)
ChallengeReply._fields_ = [("struct_size", c_uint32), ("reply_data", c_void_p), ("complete", ChallengeComplete)]


class AssetPack(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("id", c_char_p), ("version", c_int64), ("download_size", c_int64),
                ("user_info_json", c_char_p)]


class AssetPackUpdate(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("kind", c_int32), ("pack", ctypes.POINTER(AssetPack)),
                ("completed", c_int64), ("total", c_int64), ("error", ctypes.POINTER(Error))]


class Options(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("callback_mode", c_int32), ("app_identifier", c_char_p),
                ("socket_path", c_char_p)]


DownloadEvent = ctypes.CFUNCTYPE(None, c_void_p, ctypes.POINTER(Download))
DownloadWrite = ctypes.CFUNCTYPE(None, c_void_p, ctypes.POINTER(Download), c_int64, c_int64, c_int64)
DownloadChallenge = ctypes.CFUNCTYPE(None, c_void_p, ctypes.POINTER(Download), ctypes.POINTER(Challenge),
                                     ctypes.POINTER(ChallengeReply))
DownloadFailed = ctypes.CFUNCTYPE(None, c_void_p, ctypes.POINTER(Download), ctypes.POINTER(Error))
DownloadFinished = ctypes.CFUNCTYPE(None, c_void_p, ctypes.POINTER(Download), c_char_p)


class Delegate(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("context", c_void_p), ("download_did_begin", DownloadEvent),
                ("download_did_pause", DownloadEvent), ("download_did_write", DownloadWrite),
                ("download_did_receive_challenge", DownloadChallenge), ("download_failed", DownloadFailed),
                ("download_finished", DownloadFinished)]


DownloadVisitor = ctypes.CFUNCTYPE(None, c_void_p, ctypes.POINTER(Download))
ExclusiveHandler = ctypes.CFUNCTYPE(None, c_void_p, ctypes.POINTER(Error))
PackVisitor = ctypes.CFUNCTYPE(None, c_void_p, ctypes.POINTER(AssetPack))
PackUpdateHandler = ctypes.CFUNCTYPE(None, c_void_p, ctypes.POINTER(AssetPackUpdate))
PackCompletion = ctypes.CFUNCTYPE(None, c_void_p, c_char_p, ctypes.POINTER(Error))
IdVisitor = ctypes.CFUNCTYPE(None, c_void_p, c_char_p)
LanguageVisitor = ctypes.CFUNCTYPE(None, c_void_p, c_char_p)

CALLBACKS_ON_LIBRARY_THREAD = 0
CALLBACKS_ON_DISPATCH = 1
DOWNLOAD_KIND_URL = 0

_E = ctypes.POINTER(Error)
_PROTOTYPES = {
    "ba_app_library_version": (Version, []),
    "ba_app_connect": (c_bool, [ctypes.POINTER(Options), ctypes.POINTER(c_void_p), _E]),
    "ba_app_disconnect": (None, [c_void_p]),
    "ba_app_set_delegate": (c_bool, [c_void_p, ctypes.POINTER(Delegate), _E]),
    "ba_app_fd": (c_int, [c_void_p]),
    "ba_app_dispatch": (c_int, [c_void_p]),
    "ba_app_schedule_download": (c_bool, [c_void_p, ctypes.POINTER(Download), _E]),
    "ba_app_start_foreground_download": (c_bool, [c_void_p, ctypes.POINTER(Download), _E]),
    "ba_app_cancel_download": (c_bool, [c_void_p, ctypes.POINTER(Download), _E]),
    "ba_app_fetch_current_downloads": (c_bool, [c_void_p, DownloadVisitor, c_void_p, _E]),
    "ba_app_copy_current_downloads": (c_bool, [c_void_p, ctypes.POINTER(ctypes.POINTER(DownloadList)), _E]),
    "ba_app_acquire_exclusive_control": (c_bool, [c_void_p, c_int64, _E]),
    "ba_app_release_exclusive_control": (None, [c_void_p]),
    "ba_app_set_playing": (c_bool, [c_void_p, c_bool, _E]),
    "ba_app_with_exclusive_control": (c_bool, [c_void_p, c_int64, ExclusiveHandler, c_void_p, _E]),
    "ba_app_container_path": (c_bool, [c_void_p, c_char_p, c_char_p, c_size_t, ctypes.POINTER(c_size_t), _E]),
    "ba_app_asset_packs": (c_bool, [c_void_p, PackVisitor, c_void_p, _E]),
    "ba_app_asset_pack": (c_bool, [c_void_p, c_char_p, PackVisitor, c_void_p, _E]),
    "ba_app_asset_pack_status": (c_bool, [c_void_p, c_char_p, ctypes.POINTER(c_int64), _E]),
    "ba_app_asset_pack_local_status": (c_int64, [c_void_p, c_char_p]),
    "ba_app_asset_pack_is_available_locally": (c_bool, [c_void_p, c_char_p]),
    "ba_app_set_asset_pack_observer": (c_bool, [c_void_p, PackUpdateHandler, c_void_p, _E]),
    "ba_app_ensure_asset_pack": (c_bool, [c_void_p, c_char_p, c_bool, PackCompletion, c_void_p, _E]),
    "ba_app_cancel_asset_pack_download": (c_bool, [c_void_p, c_char_p, _E]),
    "ba_app_check_for_asset_pack_updates": (c_bool, [c_void_p, IdVisitor, IdVisitor, c_void_p, _E]),
    "ba_app_remove_asset_pack": (c_bool, [c_void_p, c_char_p, _E]),
    "ba_app_asset_pack_contents": (c_bool, [c_void_p, c_char_p, c_char_p, ctypes.POINTER(c_void_p),
                                            ctypes.POINTER(c_size_t), _E]),
    "ba_app_asset_pack_open": (c_int, [c_void_p, c_char_p, c_char_p, _E]),
    "ba_app_asset_pack_path": (c_bool, [c_void_p, c_char_p, c_char_p, c_size_t, ctypes.POINTER(c_size_t), _E]),
    "ba_app_free": (None, [c_void_p]),
    "ba_app_asset_pack_localized_contents": (c_bool, [c_void_p, c_char_p, c_char_p, ctypes.POINTER(c_void_p),
                                                      ctypes.POINTER(c_size_t), _E]),
    "ba_app_asset_pack_language": (c_bool, [c_void_p, c_int32, c_char_p, c_size_t, ctypes.POINTER(c_size_t), _E]),
    "ba_app_asset_pack_languages": (c_bool, [c_void_p, c_int32, LanguageVisitor, c_void_p, _E]),
    "ba_app_set_asset_pack_language": (c_bool, [c_void_p, c_char_p, _E]),
    "ba_app_reconcile_asset_pack_languages": (c_bool, [c_void_p, _E]),
}


def _load():
    path = os.environ.get("BACKGROUNDASSETS_LIBRARY")
    candidates = [path] if path else ["libbackgroundassets.so.1", ctypes.util.find_library("backgroundassets")]
    failures = []
    for candidate in filter(None, candidates):
        try:
            library = ctypes.CDLL(candidate)
            break
        except OSError as failure:
            failures.append(str(failure))
    else:
        raise ImportError("backgroundassets: bahost's C library is not installed (libbackgroundassets.so.1: "
                          "scripts/install.sh or the bahost .deb installs it; BACKGROUNDASSETS_LIBRARY names "
                          "another): " + "; ".join(failures))
    library.ba_app_library_version.restype = Version
    version = library.ba_app_library_version()
    if version.major != 1 or version.minor < 1:
        raise ImportError(f"backgroundassets: the C library speaks API {version.major}.{version.minor}; "
                          "this package needs 1.1 or a later 1.x (ba_app_copy_current_downloads)")
    for name, (result, arguments) in _PROTOTYPES.items():
        function = getattr(library, name)
        function.restype = result
        function.argtypes = arguments
    return library


lib = _load()
