"""An app in Python, as the launched app: schedules the downloads it is given (ID=URL@SIZE, with a header and a
SHA-256 for the first, kept off metered networks for the second), then prints its current downloads as fetch_current_downloads returns them (one copy of the
list) and as the library's visitor gives them one by one, and whether the fetch left Python's collector as the app
had it. One JSON object a line."""

import dataclasses
import gc
import hashlib
import json
import sys

import backgroundassets as ba
from backgroundassets import _library as c
from backgroundassets.downloads import from_c
from backgroundassets.manager import _call


def described(downloads):
    rows = [dataclasses.asdict(d) | {"state": int(d.state), "headers": list(d.headers)} for d in downloads]
    return sorted(rows, key=lambda row: row["identifier"])


def main():
    manager = ba.BADownloadManager.shared()
    group = "group.com.example.levels"
    for index, spec in enumerate(a for a in sys.argv[1:] if a != "--json"):
        identifier, rest = spec.split("=", 1)
        url, size = rest.rsplit("@", 1)
        extra = {"headers": ["X-Level: 7", "X-Player: ünïcode"],
                 "sha256": hashlib.sha256(b"not the file").hexdigest()} if index == 0 else \
            {"allows_expensive_network_access": False}
        manager.schedule_download(ba.BAURLDownload(identifier, url, application_group_identifier=group,
                                                   file_size=int(size), priority=10 + index, **extra))
    copied = manager.fetch_current_downloads()
    # The fetch pauses the collector while it makes the values; the app's own setting must survive it.
    collector = [gc.isenabled()]
    gc.disable()
    manager.fetch_current_downloads()
    collector.append(gc.isenabled())
    gc.enable()
    visited = []
    visitor = c.DownloadVisitor(lambda _, d: visited.append(from_c(d)))
    _call(c.lib.ba_app_fetch_current_downloads, visitor, None)
    print(json.dumps({"copied": described(copied), "visited": described(visited), "collector": collector}),
          flush=True)


main()
