#!/usr/bin/env bash
# The main job end to end: builds bahost and the example extensions (Swift with SwiftPM, C with plain cc), then
# runs each under `bahost run` for an install content request and prints what happened.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-dependencies.sh
swift build
bin=$(swift build --show-bin-path)
mkdir -p "$bin/extensions"
cc -Wall -Wextra -shared -fPIC -I SDK/C/include -o "$bin/extensions/example_extension.so" Plugins/C/example_extension.c

echo
echo "== Swift extension (Plugins/Swift/ExampleExtension), install"
"$bin/bahost" run --plugin "$bin/libExampleExtension.so" --event install --manifest Plugins/Examples/manifest.json \
    --info-plist Plugins/Examples/Info.plist
echo
echo "== C extension (Plugins/C/example_extension.c), periodic, as JSON"
"$bin/bahost" run --plugin "$bin/extensions/example_extension.so" --event periodic \
    --manifest Plugins/Examples/manifest.txt --info-plist Plugins/Examples/Info.plist --json
