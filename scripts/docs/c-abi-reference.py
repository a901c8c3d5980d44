#!/usr/bin/env python3
"""Writes the C ABI's reference page (a DocC article) from its headers, so that the page is the headers' own
comments and cannot say anything they do not: each header's opening comment as prose, then its declarations with
their comments, in ba.h's order: the extensions' page (ba/ba.h) or the apps' (ba/app.h).
Usage: c-abi-reference.py extension|app INCLUDE-DIR OUTPUT.md"""
import re
import sys
from pathlib import Path

EXTENSION = ["ba.h", "version.h", "error.h", "download.h", "challenge.h", "asset_pack.h", "host.h", "extension.h",
             "entry.h"]
APP = ["app.h", "app_asset_packs.h"]
PAGES = {
    "extension": ("The C ABI", "Every declaration of `<ba/ba.h>`, with its rules, from the headers themselves.", [
        "An extension is a shared object that exports one C function, `ba_extension_entry`. Any language that can",
        "export a C function can write one. Install bahost and build against the headers with",
        "`cc -shared -fPIC $(pkg-config --cflags bahost) -o levels.so levels.c`; no library is linked.",
    ], EXTENSION),
    "app": ("The app's C API", "Every declaration of `<ba/app.h>` and `<ba/app_asset_packs.h>`, from the headers "
            "themselves.", [
        "An app in C, C++, Lua, Python or any language with a C FFI links `libbackgroundassets` and talks to the",
        "bahost service through it: Apple's `BADownloadManager`, its delegate and `AssetPackManager`. Build with",
        "`cc -o game game.c $(pkg-config --cflags --libs backgroundassets)` and run the app through",
        "`bahost launch APP -- ./game`. The types it shares with extensions (a download, an error, a challenge, a",
        "pack) are on the C ABI's page.",
    ], APP),
}


def split(text):
    """The header's opening comment (as lines of prose) and its body without guards and includes."""
    match = re.match(r"\s*/\*(.*?)\*/", text, re.S)
    if not match:
        raise SystemExit("a header lacks its opening comment")
    prose = [re.sub(r"^\s*\* ?", "", line).rstrip() for line in match.group(1).strip().splitlines()]
    body = text[match.end():]
    body = re.sub(r"^#(ifndef|define) BA_\w+_H\s*$|^#endif\s*$|^#include .*$", "", body, flags=re.M)
    return prose, re.sub(r"\n{3,}", "\n\n", body).strip("\n")


def main():
    which, include, output = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    names = sorted(p.name for p in include.glob("*.h"))
    if sorted(EXTENSION + APP) != names:
        raise SystemExit(f"the headers are {names}; update EXTENSION or APP in {sys.argv[0]}")
    title, abstract, overview, order = PAGES[which]
    page = [f"# {title}", "", abstract, "", "## Overview", ""] + overview + [
        "",
        "This page is generated from `SDK/C/include/ba/` by `scripts/docs.sh`; edit the headers, not the page.",
        "",
    ]
    for name in order:
        prose, body = split((include / name).read_text())
        first, rest = prose[0], prose[1:]
        page += [f"### ba/{name}", ""]
        summary = first.split(": ", 1)[1] if ": " in first else first
        page += [summary[:1].upper() + summary[1:]] + [line.rstrip() for line in rest] + [""]
        if body:
            page += ["```c", body, "```", ""]
    output.write_text("\n".join(page).rstrip("\n") + "\n")


main()
