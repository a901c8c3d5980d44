#!/usr/bin/env python3
"""Fails, listing each one, when a public symbol of the given modules has no documentation comment. Reads the
symbol graphs `swift package dump-symbol-graph` writes. Members the compiler synthesizes (Hashable's hashValue,
a protocol's default implementations from the standard library) have no source location and are not ours to
document. Usage: doc-coverage.py SYMBOL-GRAPH-DIR MODULE..."""
import json
import sys
from pathlib import Path

directory, modules = Path(sys.argv[1]), sys.argv[2:]
missing = []
for module in modules:
    files = [directory / f"{module}.symbols.json", *directory.glob(f"{module}@*.symbols.json")]
    if not files[0].exists():
        raise SystemExit(f"no symbol graph for {module} in {directory}")
    count = 0
    for file in files:
        for symbol in json.loads(file.read_text())["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open") or "location" not in symbol:
                continue
            count += 1
            if not symbol.get("docComment"):
                where = symbol["location"]["uri"].split("/")[-1] + ":" + str(symbol["location"]["position"]["line"] + 1)
                missing.append(f"{module}.{'.'.join(symbol['pathComponents'])} ({where})")
    print(f"{module}: {count} public symbols")
if missing:
    print("undocumented public symbols:", *missing, sep="\n  ")
    sys.exit(1)
print("every public symbol is documented")
