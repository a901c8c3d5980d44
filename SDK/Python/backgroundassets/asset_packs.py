"""Apple's AssetPackManager over the C library, with asyncio for what waits (availability, status updates)."""

import asyncio
import ctypes
import dataclasses
import enum
import json
import os
import threading

from . import _library as c
from .errors import BAError
from .manager import _call, _check, _connection

lib = c.lib


class Status(enum.IntFlag):
    """Apple's AssetPack.Status."""
    DOWNLOAD_AVAILABLE = 1
    UPDATE_AVAILABLE = 2
    UP_TO_DATE = 4
    OUT_OF_DATE = 8
    OBSOLETE = 16
    DOWNLOADING = 32
    DOWNLOADED = 64


@dataclasses.dataclass(frozen=True)
class AssetPack:
    """Apple's AssetPack."""
    id: str
    version: int
    download_size: int
    user_info: object = None


class UpdateKind(enum.Enum):
    """Apple's AssetPackManager.DownloadStatusUpdate cases."""
    BEGAN = 0
    PAUSED = 1
    DOWNLOADING = 2
    FINISHED = 3
    FAILED = 4


@dataclasses.dataclass(frozen=True)
class StatusUpdate:
    """One change in a pack's download: `completed` and `total` bytes while downloading, `error` when failed."""
    kind: UpdateKind
    pack: AssetPack
    completed: int = 0
    total: int = 0
    error: BAError = None


def _pack(pointer):
    p = pointer.contents
    info = json.loads(p.user_info_json) if p.user_info_json else None
    return AssetPack(p.id.decode(), p.version, p.download_size, info)


class AssetPackManager:
    """The app's managed asset packs (Apple's AssetPackManager). `AssetPackManager.shared()` is the one manager;
    its connection is `BADownloadManager`'s."""

    _shared = None

    def __init__(self):
        self._lock = threading.Lock()
        self._subscribers = []  # (pack ID or None, loop, queue)
        self._observer = None

    @classmethod
    def shared(cls):
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    def asset_packs(self):
        """Every pack the server offers to the app, by ID (Apple's manifest.assetPacks)."""
        found = []
        _call(lib.ba_app_asset_packs, c.PackVisitor(lambda _, p: found.append(_pack(p))), None)
        return found

    def asset_pack(self, id):
        """The pack with this ID; ManagedBackgroundAssetsError (ASSET_PACK_NOT_FOUND) when the server offers none."""
        found = []
        _call(lib.ba_app_asset_pack, id.encode(), c.PackVisitor(lambda _, p: found.append(_pack(p))), None)
        return found[0]

    def status(self, id):
        """The pack's Status relative to the server."""
        value = ctypes.c_int64()
        _call(lib.ba_app_asset_pack_status, id.encode(), ctypes.byref(value))
        return Status(value.value)

    def local_status(self, id):
        return Status(lib.ba_app_asset_pack_local_status(_connection.get(), id.encode()))

    def is_available_locally(self, id):
        return bool(lib.ba_app_asset_pack_is_available_locally(_connection.get(), id.encode()))

    async def ensure_local_availability(self, pack, require_latest_version=False):
        """Downloads the pack unless it is on the device (or, with require_latest_version, its newest version is),
        and returns once it is available locally."""
        id = pack.id if isinstance(pack, AssetPack) else pack
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def done(_, __, error):
            failure = BAError._from(error.contents) if error else None
            loop.call_soon_threadsafe(_settle, future, failure)
            _connection.keep.remove(callback)

        callback = c.PackCompletion(done)
        _connection.keep.append(callback)
        self._ensure_observer()
        _call(lib.ba_app_ensure_asset_pack, id.encode(), require_latest_version, callback, None)
        await future

    def cancel_download(self, id):
        """Stops the pack's download (Apple's progress.cancel() on a status update)."""
        _call(lib.ba_app_cancel_asset_pack_download, id.encode())

    def status_updates(self, id=None):
        """An async iterator of status updates: every pack's, or one pack's (ending after FINISHED or FAILED)."""
        self._ensure_observer()
        queue = asyncio.Queue()
        entry = (id, asyncio.get_running_loop(), queue)
        with self._lock:
            self._subscribers.append(entry)
        return _Updates(self, entry)

    def check_for_updates(self):
        """Updates outdated packs and removes obsolete ones: (updating IDs, removed IDs)."""
        updating, removed = set(), set()
        _call(lib.ba_app_check_for_asset_pack_updates, c.IdVisitor(lambda _, i: updating.add(i.decode())),
                   c.IdVisitor(lambda _, i: removed.add(i.decode())), None)
        return updating, removed

    def remove(self, id):
        _call(lib.ba_app_remove_asset_pack, id.encode())

    def contents(self, path, pack_id=None, language=None):
        """The bytes of the file at `path` in the packs' shared namespace (or in one pack; or, with `language`, a
        BCP-47 tag, in the packs localized for it)."""
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        if language:
            _call(lib.ba_app_asset_pack_localized_contents, os.fsencode(path), language.encode(), ctypes.byref(data),
                  ctypes.byref(size))
        else:
            _call(lib.ba_app_asset_pack_contents, os.fsencode(path), pack_id.encode() if pack_id else None,
                  ctypes.byref(data), ctypes.byref(size))
        try:
            return ctypes.string_at(data, size.value)
        finally:
            lib.ba_app_free(data)

    def _language(self, which):
        buffer = ctypes.create_string_buffer(256)
        _call(lib.ba_app_asset_pack_language, which, buffer, len(buffer), None)
        return buffer.value.decode() or None

    def _languages(self, which):
        found = []
        _call(lib.ba_app_asset_pack_languages, which, c.LanguageVisitor(lambda _, tag: found.append(tag.decode())),
              None)
        return found

    @property
    def primary_language(self):
        """The download manifest's primary language (a BCP-47 tag), or None."""
        return self._language(0)

    @property
    def resolved_language_id(self):
        """The language the localized packs follow, as a BCP-47 tag (Apple's resolvedLanguage); None: the user's."""
        return self._language(1)

    @resolved_language_id.setter
    def resolved_language_id(self, language):
        _call(lib.ba_app_set_asset_pack_language, language.encode() if language else None)

    @property
    def available_languages(self):
        """The languages the server's localized packs offer."""
        return self._languages(0)

    @property
    def locally_available_languages(self):
        """The languages of the localized packs on the device."""
        return self._languages(1)

    def reconcile_preferred_languages(self):
        """Brings the localized packs on the device in line with the resolved language."""
        _call(lib.ba_app_reconcile_asset_pack_languages)

    def descriptor(self, path, pack_id=None):
        """An open, read-only descriptor of the file; the caller closes it."""
        error = c.Error.empty()
        descriptor = lib.ba_app_asset_pack_open(_connection.get(), os.fsencode(path),
                                                pack_id.encode() if pack_id else None, ctypes.byref(error))
        _check(descriptor >= 0, error)
        return descriptor

    def url(self, path):
        """The path of the item at `path` in the namespace (Apple's url(for:))."""
        buffer = ctypes.create_string_buffer(4096)
        _call(lib.ba_app_asset_pack_path, os.fsencode(path), buffer, len(buffer), None)
        return buffer.value.decode()

    def _ensure_observer(self):
        with self._lock:
            if self._observer is not None:
                return
            self._observer = c.PackUpdateHandler(self._publish)
            _connection.keep.append(self._observer)
        _call(lib.ba_app_set_asset_pack_observer, self._observer, None)

    def _publish(self, _, pointer):
        u = pointer.contents
        update = StatusUpdate(UpdateKind(u.kind), _pack(u.pack), u.completed, u.total,
                              BAError._from(u.error.contents) if u.error else None)
        with self._lock:
            targets = [s for s in self._subscribers if s[0] in (None, update.pack.id)]
        for _, loop, queue in targets:
            loop.call_soon_threadsafe(queue.put_nowait, update)

    def _unsubscribe(self, entry):
        with self._lock:
            if entry in self._subscribers:
                self._subscribers.remove(entry)


class _Updates:
    def __init__(self, manager, entry):
        self._manager, self._entry, self._done = manager, entry, False

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self._done:
            raise StopAsyncIteration
        update = await self._entry[2].get()
        if self._entry[0] is not None and update.kind in (UpdateKind.FINISHED, UpdateKind.FAILED):
            self._done = True
            self._manager._unsubscribe(self._entry)
        return update


def _settle(future, failure):
    if future.done():
        return
    if failure:
        future.set_exception(failure)
    else:
        future.set_result(None)
