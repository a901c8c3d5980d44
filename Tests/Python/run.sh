#!/usr/bin/env bash
# The Python binding's tests (pytest): `pip install ./SDK/Python` into a fresh virtual environment of Debian's
# Python, as a user installs it, then pytest against the debug build's library, daemon and example extension
# (conftest.py starts nginx and the daemons). Run by scripts/test.sh after `swift build`.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=$(swift build --show-bin-path)
[ -f "$build/libbackgroundassets.so" ] || { echo "Tests/Python/run.sh: build first (swift build)" >&2; exit 1; }
venv=$(mktemp -d /tmp/bahost-python.XXXXXX)
trap 'rm -rf "$venv"' EXIT
# Debian's interpreter, whatever else is first on PATH; its pytest and setuptools, so that nothing is fetched.
/usr/bin/python3 -m venv --system-site-packages "$venv"
# From a copy, so that the build leaves nothing in the checkout.
cp -r SDK/Python "$venv/package"
"$venv/bin/pip" install --quiet --no-build-isolation --no-index "$venv/package"
BACKGROUNDASSETS_LIBRARY="$build/libbackgroundassets.so" BAHOST_BUILD="$build" \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider Tests/Python "$@"
