"""Apple's BADownloadManager and BADownloadManagerDelegate over the C library."""

import contextlib
import ctypes
import enum
import threading

from . import _library as c
from .downloads import from_c, from_list, to_c
from .errors import BAError

lib = c.lib


class ChallengeDisposition(enum.IntEnum):
    """Apple's URLSession.AuthChallengeDisposition."""
    USE_CREDENTIAL = 0
    PERFORM_DEFAULT_HANDLING = 1
    CANCEL_AUTHENTICATION_CHALLENGE = 2
    REJECT_PROTECTION_SPACE = 3


class Challenge:
    """A server's request for credentials (Apple's URLAuthenticationChallenge's protection space)."""

    def __init__(self, value):
        text = lambda b: b.decode("utf-8", "replace") if b else None  # noqa: E731
        self.host, self.port, self.protocol = text(value.host), value.port, text(value.protocol)
        self.realm, self.authentication_method = text(value.realm), text(value.authentication_method)
        self.previous_failure_count = value.previous_failure_count


class BADownloadManagerDelegate:
    """Apple's BADownloadManagerDelegate. Define the methods you want: one you leave out is one the app does not
    implement, and for a completion or a challenge the service then wakes the app's extension instead. Methods run
    on a thread of the library's, one at a time."""

    # download_did_begin(self, download)
    # download_did_pause(self, download)
    # download_did_write(self, download, bytes_written, total_bytes_written, total_bytes_expected)
    # download_did_receive_challenge(self, download, challenge) -> (ChallengeDisposition, (user, password) or None)
    # download_failed(self, download, error)
    # download_finished(self, download, path): move the file before returning, or it is deleted


def _check(ok, error):
    if not ok:
        raise BAError._from(error)


def _call(function, *arguments):
    """Calls a library function that takes the connection first and an error last; raises what it reports."""
    error = c.Error.empty()
    _check(function(_connection.get(), *arguments, ctypes.byref(error)), error)


class _Connection:
    """The process's one `ba_app_t`, opened at the first call."""

    def __init__(self):
        self._lock = threading.Lock()
        self.handle = None
        self.keep = []  # ctypes callbacks the library holds

    def get(self):
        with self._lock:
            if self.handle is None:
                options = c.Options(struct_size=ctypes.sizeof(c.Options), callback_mode=c.CALLBACKS_ON_LIBRARY_THREAD)
                handle, error = ctypes.c_void_p(), c.Error.empty()
                _check(lib.ba_app_connect(ctypes.byref(options), ctypes.byref(handle), ctypes.byref(error)), error)
                self.handle = handle
            return self.handle

    def close(self):
        with self._lock:
            if self.handle is not None:
                lib.ba_app_disconnect(self.handle)
                self.handle = None
            self.keep = []


_connection = _Connection()


def disconnect():
    """Closes the connection to the service (waiting for a callback that runs); the next call opens another."""
    _connection.close()
    if BADownloadManager._shared is not None:
        BADownloadManager._shared._delegate = None


class BADownloadManager:
    """The app's downloads (Apple's BADownloadManager). `BADownloadManager.shared()` is the one manager."""

    _shared = None

    def __init__(self):
        self._delegate = None

    @classmethod
    def shared(cls):
        if cls._shared is None:
            cls._shared = cls()
        return cls._shared

    @property
    def delegate(self):
        return self._delegate

    @delegate.setter
    def delegate(self, delegate):
        if delegate is None:
            _call(lib.ba_app_set_delegate, None)
            self._delegate = None
            return
        table = c.Delegate(struct_size=ctypes.sizeof(c.Delegate))
        callbacks = []

        def bind(field, kind, method, adapt):
            function = getattr(delegate, method, None)
            if function is None:
                return
            callback = kind(lambda *arguments: adapt(function, *arguments))
            callbacks.append(callback)
            setattr(table, field, callback)

        bind("download_did_begin", c.DownloadEvent, "download_did_begin", lambda f, _, d: f(from_c(d)))
        bind("download_did_pause", c.DownloadEvent, "download_did_pause", lambda f, _, d: f(from_c(d)))
        bind("download_did_write", c.DownloadWrite, "download_did_write",
             lambda f, _, d, written, total, expected: f(from_c(d), written, total, expected))
        bind("download_did_receive_challenge", c.DownloadChallenge, "download_did_receive_challenge",
             _answer_challenge)
        bind("download_failed", c.DownloadFailed, "download_failed",
             lambda f, _, d, error: f(from_c(d), BAError._from(error.contents)))
        bind("download_finished", c.DownloadFinished, "download_finished",
             lambda f, _, d, path: f(from_c(d), path.decode()))
        _call(lib.ba_app_set_delegate, ctypes.byref(table))
        _connection.keep.append(callbacks)
        self._delegate = delegate

    def schedule_download(self, download):
        """Queues `download` to run at the system's discretion."""
        value, keep = to_c(download)
        _call(lib.ba_app_schedule_download, ctypes.byref(value))

    def start_foreground_download(self, download):
        """Starts `download` now, or promotes a scheduled one."""
        value, keep = to_c(download)
        _call(lib.ba_app_start_foreground_download, ctypes.byref(value))

    def cancel(self, download):
        """Cancels a scheduled or running download (code 101 when it is not scheduled)."""
        value, keep = to_c(download)
        _call(lib.ba_app_cancel_download, ctypes.byref(value))

    def fetch_current_downloads(self):
        """The app's scheduled and running downloads."""
        # One copy of them all, not a visitor: a ctypes callback a download cost as much as the download's value.
        listing = ctypes.POINTER(c.DownloadList)()
        _call(lib.ba_app_copy_current_downloads, ctypes.byref(listing))
        try:
            return from_list(listing.contents)
        finally:
            lib.ba_app_free(listing)

    @contextlib.contextmanager
    def exclusive_control(self, timeout=None):
        """Holds exclusive control between the app and its extension for a `with` block (Apple's
        withExclusiveControl(before:)): waits up to `timeout` seconds (None: as long as needed), else raises
        BAError (NSPOSIXErrorDomain ETIMEDOUT)."""
        milliseconds = -1 if timeout is None else max(0, int(timeout * 1000))
        _call(lib.ba_app_acquire_exclusive_control, milliseconds)
        try:
            yield
        finally:
            lib.ba_app_release_exclusive_control(_connection.get())

    def with_exclusive_control(self, handler, timeout=None):
        """Apple's closure form: returns at once; `handler(acquired, error)` runs on the library's thread with
        the lock held (released when it returns), or with the error."""
        milliseconds = -1 if timeout is None else max(0, int(timeout * 1000))

        def call(_, error):
            try:
                handler(not error, BAError._from(error.contents) if error else None)
            finally:
                _connection.keep.remove(callback)

        callback = c.ExclusiveHandler(call)
        _connection.keep.append(callback)
        _call(lib.ba_app_with_exclusive_control, milliseconds, callback, None)

    def set_playing(self, playing):
        """Says whether a game of the app runs (a bahost addition): while one does, the person's game.while-playing
        setting holds or slows background downloads, as while GameMode has a client."""
        _call(lib.ba_app_set_playing, bool(playing))

    def container_path(self, group_identifier):
        """The folder the app group's app and extension share (Apple's containerURL(forSecurityApplicationGroup-
        Identifier:)); None for a group that is not the app's."""
        size = ctypes.c_size_t(0)
        error = c.Error.empty()
        buffer = ctypes.create_string_buffer(4096)
        if lib.ba_app_container_path(_connection.get(), group_identifier.encode(), buffer, len(buffer),
                                     ctypes.byref(size), ctypes.byref(error)):
            return buffer.value.decode()
        if error.domain == b"BAHostErrorDomain" and error.code == 2:  # ENOENT: not the app's group
            return None
        raise BAError._from(error)


def _answer_challenge(method, _, download, challenge, reply):
    answer = method(from_c(download), Challenge(challenge.contents))
    disposition, credential = answer if answer else (ChallengeDisposition.PERFORM_DEFAULT_HANDLING, None)
    user, password = credential if credential else (None, None)
    reply.contents.complete(reply, int(disposition), user.encode() if user else None,
                            password.encode() if password else None)
