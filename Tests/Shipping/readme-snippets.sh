#!/usr/bin/env bash
# Every code snippet the README and the documentation (docs/, CONTRIBUTING.md) show builds as written, and the
# runnable ones run:
#   - its Package.swift, verbatim, beside a copy of this checkout named bahost (`.package(path: "../bahost")`), with
#     the Swift extension snippet as its target; the README's other Swift snippets (the managed extension, the
#     AssetPackManager code, the BackgroundAssetsTesting test) go into targets the test appends to that package;
#     then `swift build` and `swift test`, whose test is the README's own harness snippet;
#   - its C extension, compiled with the README's own cc command, then held to its budget by `bahost check`;
#   - its C app, compiled with the README's own cc command (pkg-config pointed at this checkout), run unlaunched.
# A Swift or C snippet the test does not know fails it, so that a new snippet gets a place here.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
bin=$(swift build --show-bin-path)
[ -x "$bin/bahost" ] || { echo "build first (swift build)" >&2; exit 1; }

work=$(mktemp -d /tmp/bahost-readme.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/bahost"
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$work/bahost"

python3 - "$work" README.md docs/*.md CONTRIBUTING.md <<'PYTHON'
import re, sys
from pathlib import Path
work = Path(sys.argv[1])
blocks = [block for page in sys.argv[2:] for block in re.findall(r"^```(\w*)\n(.*?)^```", Path(page).read_text(), re.S | re.M)]
places = [  # (language, what identifies it, where it goes)
    ("swift", "// swift-tools-version", "LevelsExtension/Package.swift"),
    ("swift", "struct LevelsExtension: BADownloaderExtension", "LevelsExtension/Sources/LevelsExtension/LevelsExtension.swift"),
    ("swift", "struct LevelsExtension: ManagedDownloaderExtension", "LevelsExtension/Sources/ManagedLevels/ManagedLevels.swift"),
    ("swift", "AssetPackManager.shared", "LevelsExtension/Sources/PacksApp/main.swift"),
    ("swift", "import BackgroundAssetsTesting", "LevelsExtension/Tests/LevelsExtensionTests/LevelsExtensionTests.swift"),
    ("c", "ba_extension_entry", "bahost/levels.c"),
    ("c", "ba_app_connect", "bahost/game.c"),
]
placed = set()
for language, text in blocks:
    if language == "sh" and "cc -shared" in text:
        (work / "cc-command").write_text(next(l for l in text.splitlines() if l.startswith("cc ")))
    if language == "sh" and "pkg-config --cflags --libs backgroundassets" in text:
        (work / "app-cc-command").write_text(next(l for l in text.splitlines() if l.startswith("cc ")))
    if language not in ("swift", "c"):
        continue
    matches = [path for lang, marker, path in places if lang == language and marker in text]
    if len(matches) != 1:
        sys.exit(f"a {language} snippet the README test does not know (add it to Tests/Shipping/readme-snippets.sh):\n{text[:300]}")
    if matches[0] in placed:
        sys.exit(f"two README snippets for {matches[0]}")
    placed.add(matches[0])
    file = work / matches[0]
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text)
missing = {path for _, _, path in places} - placed
if missing:
    sys.exit(f"the README no longer shows the snippets for {sorted(missing)}: update the test")
PYTHON

cat >> "$work/LevelsExtension/Package.swift" <<'SWIFT'

// Appended by Tests/Shipping/readme-snippets.sh: the README's other Swift snippets, a target each.
package.products += [.library(name: "ManagedLevels", type: .dynamic, targets: ["ManagedLevels"])]
package.targets += [
    .target(name: "ManagedLevels", dependencies: [.product(name: "BackgroundAssets", package: "bahost")]),
    .executableTarget(name: "PacksApp", dependencies: [.product(name: "BackgroundAssets", package: "bahost")]),
    .testTarget(
        name: "LevelsExtensionTests",
        dependencies: [
            .product(name: "BackgroundAssetsTesting", package: "bahost"),
            .product(name: "bahost-extension-runner", package: "bahost"),
        ]),
]
SWIFT

echo "== the README's Swift snippets: swift build, swift test"
(cd "$work/LevelsExtension" && swift build > "$work/swift.log" 2>&1 && swift test >> "$work/swift.log" 2>&1) || {
    grep -E "error:" "$work/swift.log" >&2 || tail -30 "$work/swift.log" >&2; fail "the README's Swift snippets do not build or pass"; }
grep -q "Test levelsExtensionIsQuick() passed" "$work/swift.log" || fail "the README's harness test did not run"

echo "== the README's C snippet: $(cat "$work/cc-command")"
(cd "$work/bahost" && eval "$(cat "$work/cc-command")") || fail "the README's C snippet does not compile"
"$bin/bahost" check --plugin "$work/bahost/levels.so" --event install --within 5 > "$work/check.out" || {
    cat "$work/check.out" >&2; fail "the README's C extension fails bahost check"; }
grep -q "1 download: level-1" "$work/check.out" || fail "the README's C extension: $(cat "$work/check.out")"
echo "== the README's C app: $(cat "$work/app-cc-command")"
# pkg-config finds the checkout's headers and the build's library as the installed backgroundassets.pc would.
mkdir -p "$work/pkgconfig" "$work/lib"
ln -s "$bin/libbackgroundassets.so" "$work/lib/libbackgroundassets.so"
ln -s "$bin/libbackgroundassets.so" "$work/lib/libbackgroundassets.so.1"
printf 'Name: backgroundassets\nDescription: test\nVersion: 0\nCflags: -I%s\nLibs: -L%s -lbackgroundassets -Wl,-rpath,%s\n' \
    "$repo/SDK/C/include" "$work/lib" "$work/lib" > "$work/pkgconfig/backgroundassets.pc"
(cd "$work/bahost" && PKG_CONFIG_PATH="$work/pkgconfig" eval "$(cat "$work/app-cc-command")") \
    || fail "the README's C app does not compile"
# Run without a launch, it is refused as the README's code says it would be: the message, exit 1.
if (cd "$work/bahost" && env -u BAHOST_APP_IDENTIFIER ./game) 2> "$work/game.err"; then fail "the README's C app ran without an identity"; fi
grep -q "no app identity" "$work/game.err" || fail "the README's C app: $(cat "$work/game.err")"
echo "PASS: every Swift and C snippet of the README builds, and its extensions and test run"
