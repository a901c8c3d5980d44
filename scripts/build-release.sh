#!/usr/bin/env bash
# Builds products as bahost ships them (scripts/install.sh, the .deb, an app's package, the full benchmark suite):
# release, with the Swift runtime linked statically, so that they run on a machine without the Swift toolchain.
# Executables take SwiftPM's --static-swift-stdlib. The apps' C library (backgroundassets) takes -static-stdlib
# itself, since SwiftPM's flag covers executables only, and the folder of the static Foundation's libraries, which
# live beside the static runtime where a dynamic library's link does not look; it is built last, because a build
# with other flags rebuilds what it shares. Every product is built with cross-module optimization, so that the
# compiler inlines and specializes the packages' code (GRDB, swift-crypto) into bahost's own, which costs
# many small files less CPU (docs/performance/DECISIONS.md #19). Every product is linked by the toolchain's lld with
# its relative relocations packed (DT_RELR: the loader reads a bitmap, not an entry a pointer) and, for executables,
# no symbol exported (nothing loads one from them, and every library's lookups searched their table): both are
# memory the programs keep resident (docs/performance/DECISIONS.md #52). Without lld beside `swift`, the default
# linker. Prints a line for each product; on a failure, its errors and the log.
#
# Usage: scripts/build-release.sh PRODUCT...   (the products are in `swift build -c release --show-bin-path`)
set -euo pipefail
self=$(readlink -f "$0")
cd "$(dirname "$0")/.."

case "${1:-}" in
    -h|--help) sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    "") echo "build-release.sh: name the products to build (see --help)" >&2; exit 64 ;;
esac

log=$(mktemp /tmp/bahost-release-build.XXXXXX.log)
toolchain="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")"
linking=()
if [ -x "$toolchain/bin/ld.lld" ]; then
    # At a fixed path: SwiftPM would rebuild everything for a toolset file of another name.
    mkdir -p .build
    printf '{"schemaVersion": "1.0", "linker": {"path": "%s", "extraCLIOptions": %s}}\n' "$toolchain/bin/ld.lld" \
        '["-z", "pack-relative-relocs", "--no-export-dynamic"]' > .build/release-toolset.json
    linking=(--toolset "$PWD/.build/release-toolset.json")
else
    echo "build-release.sh: no ld.lld in $toolchain/bin; linking with the default linker" >&2
fi
build() {
    local product=$1
    shift
    set -- -Xswiftc -cross-module-optimization "${linking[@]}" "$@"
    echo "== building $product (swift build -c release $*; a first build takes minutes)"
    if ! swift build -c release "$@" --product "$product" > "$log" 2>&1; then
        grep -m 20 -E "error:" "$log" >&2 || tail -20 "$log" >&2
        echo "build-release.sh: the build of $product failed; its whole output is in $log" >&2
        exit 1
    fi
}
library=false
for product in "$@"; do
    if [ "$product" = backgroundassets ]; then library=true; else build "$product" --static-swift-stdlib; fi
done
if $library; then
    static_libraries="$toolchain/lib/swift_static/linux"
    build backgroundassets -Xswiftc -static-stdlib -Xlinker -L"$static_libraries"
fi
rm -f "$log"
