#!/usr/bin/env bash
# The SDK's documentation, with swift-docc-plugin: DocC for BackgroundAssets and BackgroundAssetsTesting, whose
# BackgroundAssets catalog includes the C ABI's and the app's C API's reference pages, generated from
# SDK/C/include/ba/.
#   1. regenerates those pages from the headers (with --check: fails when a committed page is not the headers');
#   2. fails when a public symbol of either module has no documentation comment;
#   3. builds both archives, treating DocC's warnings (a broken symbol link, say) as errors.
# scripts/test.sh runs it with --check, so the documentation cannot rot.
#
# Usage: scripts/docs.sh [--check] [--output DIR]   (default DIR: .build/docs; open DIR/*.doccarchive with docc preview)
set -euo pipefail
self=$(readlink -f "$0")
cd "$(dirname "$0")/.."

check=false
output=.build/docs
while [ $# -gt 0 ]; do
    case "$1" in
        --check) check=true; shift ;;
        --output) output=${2:?--output needs a folder}; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "docs.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
command -v python3 >/dev/null || scripts/install-dependencies.sh

generated=$(mktemp)
trap 'rm -f "$generated"' EXIT
for which in extension app; do
    page=SDK/Swift/BackgroundAssets/BackgroundAssets.docc/CABIReference.md
    [ "$which" = app ] && page=SDK/Swift/BackgroundAssets/BackgroundAssets.docc/CAppAPIReference.md
    python3 scripts/docs/c-abi-reference.py "$which" SDK/C/include/ba "$generated"
    if $check; then
        if ! diff -u "$page" "$generated"; then
            echo "docs.sh: $page is not what the headers say: run scripts/docs.sh and commit it" >&2
            exit 1
        fi
    else
        cp "$generated" "$page"
    fi
done

echo "== every public symbol documented"
log=$(mktemp)
trap 'rm -f "$generated" "$log"' EXIT
quietly() { "$@" > "$log" 2>&1 || { cat "$log" >&2; echo "docs.sh: failed: $*" >&2; exit 1; }; }
quietly swift package dump-symbol-graph --minimum-access-level public
python3 scripts/docs/doc-coverage.py "$(swift build --show-bin-path)/../symbolgraph" BackgroundAssets BackgroundAssetsTesting

for target in BackgroundAssets BackgroundAssetsTesting; do
    echo "== DocC: $target"
    mkdir -p "$output"
    quietly swift package --allow-writing-to-directory "$output" generate-documentation --target "$target" \
        --output-path "$output/$target.doccarchive" --warnings-as-errors
    echo "   $output/$target.doccarchive"
done
