"""Apple's BADownload and BAURLDownload, as values."""

import ctypes
import dataclasses
import enum
import gc
import struct

from . import _library as c


class State(enum.IntEnum):
    """Apple's BADownload.State."""
    FAILED = -1
    CREATED = 0
    WAITING = 1
    DOWNLOADING = 2
    FINISHED = 3


@dataclasses.dataclass(frozen=True)
class BADownload:
    """A download, as the service describes it (what fetch_current_downloads and the delegate receive)."""
    identifier: str
    application_group_identifier: str
    unique_identifier: str = ""
    state: State = State.CREATED
    priority: int = 50
    essential: bool = False
    file_size: int = 0


@dataclasses.dataclass(frozen=True)
class BAURLDownload(BADownload):
    """Apple's BAURLDownload: a file at a URL (https; http only to loopback where the service allows it)."""
    url: str = ""
    sha256: str = ""
    headers: tuple = ()
    # Apple's URLRequest.allowsExpensiveNetworkAccess and allowsConstrainedNetworkAccess: False keeps the download
    # off a metered network, or one the user marked metered (docs/DOWNLOADS.md, "Metered networks").
    allows_expensive_network_access: bool = True
    allows_constrained_network_access: bool = True

    def __init__(self, identifier, url, *, application_group_identifier, file_size=0, essential=False,
                 priority=50, sha256="", headers=(), unique_identifier="", state=State.CREATED,
                 allows_expensive_network_access=True, allows_constrained_network_access=True):
        # Filled directly, as from_c does (a frozen dataclass refuses setattr): an app may make thousands.
        self.__dict__.update(identifier=identifier, application_group_identifier=application_group_identifier,
                             unique_identifier=unique_identifier, state=State(state), priority=priority,
                             essential=essential, file_size=file_size, url=url, sha256=sha256, headers=tuple(headers),
                             allows_expensive_network_access=bool(allows_expensive_network_access),
                             allows_constrained_network_access=bool(allows_constrained_network_access))


def _network_access(download):
    """The ba_network_access_t bits of what `download` avoids."""
    return ((0 if getattr(download, "allows_expensive_network_access", True) else c.NETWORK_ACCESS_AVOIDS_EXPENSIVE)
            | (0 if getattr(download, "allows_constrained_network_access", True)
               else c.NETWORK_ACCESS_AVOIDS_CONSTRAINED))


def _allowances(bits):
    """The two allows_… fields for network_access bits."""
    return (not bits & c.NETWORK_ACCESS_AVOIDS_EXPENSIVE, not bits & c.NETWORK_ACCESS_AVOIDS_CONSTRAINED)


def to_c(download):
    """A `ba_download_t` for `download`, with what keeps its strings alive."""
    if not isinstance(download, BADownload):
        raise TypeError(f"expected a BADownload, got {type(download).__name__}")
    encoded = [h.encode() for h in getattr(download, "headers", ())]
    headers = (c.c_char_p * len(encoded))(*encoded) if encoded else None
    value = c.Download(
        struct_size=ctypes.sizeof(c.Download), kind=c.DOWNLOAD_KIND_URL, identifier=download.identifier.encode(),
        unique_identifier=download.unique_identifier.encode() or None,
        url=getattr(download, "url", "").encode() or None,
        application_group_identifier=download.application_group_identifier.encode(),
        file_size=download.file_size, priority=download.priority, state=int(download.state),
        essential=download.essential, sha256=getattr(download, "sha256", "").encode() or None,
        http_headers=ctypes.cast(headers, ctypes.POINTER(c.c_char_p)) if headers else None,
        http_header_count=len(encoded), network_access=_network_access(download))
    return value, headers


_STATES = {state.value: state for state in State}


def from_c(pointer):
    """The download a callback or a visitor was given, as a value (the C one is only borrowed). Hot: a fetch of
    10,000 downloads makes 10,000 of these, so the value is filled directly rather than through __init__."""
    d = pointer.contents
    count, headers = d.http_header_count, ()
    if count:
        lines = d.http_headers
        headers = tuple(lines[i].decode("utf-8", "replace") for i in range(count))
    unique, url, sha256 = d.unique_identifier, d.url, d.sha256
    expensive, constrained = _allowances(d.network_access if d.struct_size > c.DOWNLOAD_SIZE_1_1 else 0)
    download = object.__new__(BAURLDownload)
    download.__dict__.update(
        identifier=d.identifier.decode("utf-8", "replace"),
        application_group_identifier=(d.application_group_identifier or b"").decode("utf-8", "replace"),
        unique_identifier=unique.decode("utf-8", "replace") if unique else "",
        state=_STATES.get(d.state, State.FAILED), priority=d.priority, essential=d.essential,
        file_size=d.file_size, url=url.decode("utf-8", "replace") if url else "",
        sha256=sha256.decode("ascii", "replace") if sha256 else "", headers=headers,
        allows_expensive_network_access=expensive, allows_constrained_network_access=constrained)
    return download


def _numbers(fields, size):
    """A struct that reads these numbers of a ba_download_t of `size` bytes and skips the rest, at the offsets
    ctypes lays them out."""
    form, at = "=", 0
    for name, code in fields:
        offset = getattr(c.Download, name).offset
        form += (f"{offset - at}x" if offset > at else "") + code
        at = offset + struct.calcsize("=" + code)
    return struct.Struct(f"{form}{size - at}x")


_FIELDS_1_1 = (("file_size", "q"), ("priority", "q"), ("state", "i"), ("essential", "?"), ("http_header_count", "I"))
# This version's downloads, and a 1.1 library's (network_access 0: any network).
_NUMBERS = _numbers(_FIELDS_1_1 + (("network_access", "Q"),), ctypes.sizeof(c.Download))
_NUMBERS_1_1 = _numbers(_FIELDS_1_1, c.DOWNLOAD_SIZE_1_1)


def from_list(listing):
    """The downloads of a `ba_download_list_t`, as values: its strings decoded at once and split at their NULs
    (the order ba/app.h promises), its numbers unpacked from one copy of the downloads. Hot: through the visitor, a
    fetch of 10,000 spent as long in the ctypes callbacks and field reads as the service took to answer."""
    count, size = listing.count, listing.download_size
    if not count:
        return []
    if size < _NUMBERS_1_1.size:
        raise ValueError(f"ba_download_list_t.download_size is {size}; ba_download_t 1.1 needs {_NUMBERS_1_1.size}")
    texts = ctypes.string_at(listing.strings, listing.strings_size).decode("utf-8", "replace").split("\0")
    rows = ctypes.string_at(listing.downloads, count * size)
    numbers = _NUMBERS if size >= _NUMBERS.size else _NUMBERS_1_1
    if size != numbers.size:  # a later library's larger downloads: the fields this version knows only
        rows = b"".join(rows[offset:offset + numbers.size] for offset in range(0, count * size, size))
    unpacked = (numbers.iter_unpack(rows) if numbers is _NUMBERS
                else (row + (0,) for row in numbers.iter_unpack(rows)))
    # The collector paused while the values are made: each is two objects it tracks (itself and its fields), and
    # the collections so many new objects set off walk them again and again, and at times all the app holds.
    collecting = gc.isenabled()
    gc.disable()
    try:
        new, states, found, at = object.__new__, _STATES, [], 0
        allowances = [_allowances(bits) for bits in range(4)]
        for (file_size, priority, state, essential, header_count, access) in unpacked:
            download = new(BAURLDownload)
            # Stored one by one: update() with keywords built a second dict for every download.
            fields = download.__dict__
            (fields["identifier"], fields["unique_identifier"], fields["url"], fields["application_group_identifier"],
             fields["sha256"]) = texts[at:at + 5]
            at += 5
            fields["headers"] = tuple(texts[at:at + header_count])
            at += header_count
            fields["state"] = states.get(state, State.FAILED)
            fields["priority"], fields["essential"], fields["file_size"] = priority, essential, file_size
            (fields["allows_expensive_network_access"],
             fields["allows_constrained_network_access"]) = allowances[access & 3]
            found.append(download)
    finally:
        if collecting:
            gc.enable()
    return found
