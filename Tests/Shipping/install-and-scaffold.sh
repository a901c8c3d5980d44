#!/usr/bin/env bash
# From this checkout, as a user would: scripts/install.sh into a fresh prefix, then projects started by the
# installed `bahost new extension` built and run under the installed bahost:
#   - the apps' C library: only ba/app.h's symbols, versioned, no Swift runtime needed; the C app built with
#     `pkg-config backgroundassets` runs with no toolchain on its paths;
#   - C, built with the installed pkg-config file: `make`, `make test` (bahost check), then `bahost run`'s whole life
#     cycle against nginx on loopback, its file landing in the app group's container;
#   - Swift, built against this checkout as a package: `swift build`, `swift test` (BackgroundAssetsTesting), and
#     the same `bahost run`;
#   - both with --managed: their budget tests, and their asset pack packaged by `bahost pack package`.
# Last, scripts/uninstall.sh removes exactly what was installed (a file of the user's stays), and an install with
# --user (HOME set to a scratch folder) puts the systemd unit in ~/.config/systemd/user and takes it away again.
# SKIP_BUILD=1 installs the release the last build made.
set -euo pipefail
cd "$(dirname "$0")/../.."
. Tests/Shipping/loopback-nginx.sh
repo=$(pwd)

work=$(mktemp -d /tmp/bahost-shipping.XXXXXX)
chmod 755 "$work"  # nginx's workers read the assets as another user
nginx_pid=""
trap '[ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

step "scripts/install.sh --prefix $work/prefix"
prefix="$work/prefix"
scripts/install.sh --prefix "$prefix" ${SKIP_BUILD:+--skip-build} > "$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2; fail "scripts/install.sh failed"; }
export PATH="$prefix/bin:$PATH" PKG_CONFIG_PATH="$prefix/share/pkgconfig"
[ "$(command -v bahost)" = "$prefix/bin/bahost" ] || fail "the installed bahost is not the one on PATH"
version=$(bahost --version)
newest=$(sed -n 's/^## \([0-9][0-9.]*\) .*/\1/p' CHANGELOG.md | head -1)
[ "$version" = "$newest" ] || fail "bahost --version says '$version', CHANGELOG.md's newest entry '$newest'"
# Each listing is taken whole before it is searched: under pipefail, a writer cut off by `grep -q`'s early exit
# fails the pipeline, which turned a found match into none.
libraries=$(ldd "$prefix/bin/bahost" "$prefix/libexec/bahost/bahost-extension-runner") || fail "ldd of the installed programs"
if grep -q "libswift\|libFoundation\|libdispatch" <<< "$libraries"; then
    fail "an installed binary links the Swift runtime dynamically"
fi
# The runner is C: each library on its list is loaded at every window's start (libstdc++ cost about 1 ms of it), and
# a function it exported would take the place of an extension's own of the same name.
runner="$prefix/libexec/bahost/bahost-extension-runner"
needed=$(readelf -d "$runner" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | xargs) || fail "readelf -d of the runner"
[ "$needed" = "libc.so.6 libffi.so.8" ] || fail "the runner needs more than libc and libffi: $needed"
exported=$(nm -D --defined-only "$runner") || fail "nm -D of the runner"
[ -z "$exported" ] || fail "the runner exports functions: $(head -3 <<< "$exported")"
[ "$(pkg-config --cflags bahost | xargs)" = "-I$prefix/include/bahost" ] || fail "pkg-config --cflags bahost: $(pkg-config --cflags bahost)"
[ "$(pkg-config --modversion bahost)" = "$version" ] || fail "bahost.pc's version is not $version"
[ "$(pkg-config --modversion backgroundassets)" = "$version" ] || fail "backgroundassets.pc's version is not $version"
libraries=$(ldd "$prefix/lib/libbackgroundassets.so.1") || fail "ldd of libbackgroundassets"
grep -q "libswift\|libFoundation\|libdispatch" <<< "$libraries" && fail "libbackgroundassets links the Swift runtime dynamically"
# nm names a versioned symbol NAME@@VERSION: the names alone.
exported=$(nm -D --defined-only "$prefix/lib/libbackgroundassets.so.1" | awk '$2 ~ /[TWDBRV]/ { sub(/@.*/, "", $3); print $3 }' | sort)
[ -z "$(grep -v '^ba_app_' <<< "$exported")" ] || fail "libbackgroundassets exports more than ba/app.h: $(grep -v '^ba_app_' <<< "$exported" | head -3)"
grep -q '^ba_app_connect$' <<< "$exported" || fail "libbackgroundassets does not export ba_app_connect"
symbols=$(objdump -T "$prefix/lib/libbackgroundassets.so.1") || fail "objdump -T of libbackgroundassets"
grep -q 'BACKGROUNDASSETS_1.0.*ba_app_connect' <<< "$symbols" || fail "ba_app_connect is not versioned BACKGROUNDASSETS_1.0"
grep -q 'BACKGROUNDASSETS_1.1.*ba_app_copy_current_downloads' <<< "$symbols" \
    || fail "ba_app_copy_current_downloads (added in 1.1) is not versioned BACKGROUNDASSETS_1.1"
grep -q 'BACKGROUNDASSETS_1.2.*ba_app_set_playing' <<< "$symbols" \
    || fail "ba_app_set_playing (added in 1.2) is not versioned BACKGROUNDASSETS_1.2"
# Nothing of Foundation inside: with it (ICU's data) the library every app ships was 60 MB; without, about 7
# (docs/performance/DECISIONS.md #46). Stripped, the Swift runtime's type names still name each module.
grep -q -a '10Foundation\|20FoundationEssentials' "$prefix/lib/libbackgroundassets.so.1" \
    && fail "libbackgroundassets carries Foundation"
echo "libbackgroundassets.so.1: $(stat -c %s "$prefix/lib/libbackgroundassets.so.1") bytes, no Foundation"
grep -qx "ExecStart=$prefix/bin/bahost daemon" "$prefix/lib/systemd/user/bahost.service" || fail "the unit does not start the installed bahost"
[ -f "$prefix/lib/systemd/user/bahost.socket" ] || fail "no socket unit"
grep -q "_bahost" "$prefix/share/bash-completion/completions/bahost" || fail "no bash completion"
grep -q "#compdef bahost" "$prefix/share/zsh/site-functions/_bahost" || fail "no zsh completion"
grep -q "^complete -c 'bahost'" "$prefix/share/fish/vendor_completions.d/bahost.fish" || fail "no fish completion"
for page in bahost bahost.run bahost.new.extension bahost.check; do
    grep -q '^\.Dt' "$prefix/share/man/man1/$page.1" || fail "no man page $page.1"
done
bahost debug status --help | grep -q "Show the scheduler" || fail "bahost debug status --help"

step "an app in C, built with pkg-config backgroundassets, run with no Swift toolchain on its paths"
cc -Wall -Werror -o "$work/levels-app-c" Plugins/C/apps/levels_app.c $(pkg-config --cflags --libs backgroundassets) \
    || fail "the C app did not build with pkg-config backgroundassets"
env -i PATH=/usr/bin:/bin BAHOST_SOCKET="$work/no-service.sock" "$work/levels-app-c" --json --list > "$work/app.out" \
    && fail "the C app connected to a service that is not there"
grep -q '"event":"connect".*BAErrorDomain 55' "$work/app.out" || fail "the C app without an identity: $(cat "$work/app.out")"
env -i PATH=/usr/bin:/bin BAHOST_SOCKET="$work/no-service.sock" BAHOST_APP_IDENTIFIER=com.example.levels \
    "$work/levels-app-c" --json --list > "$work/app.out" && fail "the C app connected to a service that is not there"
grep -q '"event":"connect".*BAErrorDomain 56.*not reachable' "$work/app.out" || fail "the C app without a service: $(cat "$work/app.out")"

step "nginx on loopback, serving a manifest's asset"
mkdir -p "$work/www/levels"
head -c 1048576 /dev/urandom > "$work/www/levels/level-1.pack"
start_loopback_nginx "$work/nginx" "$work/www" || fail "nginx"
port=$nginx_port

# Points a scaffolded project at the loopback server, runs the install life cycle with the installed bahost, and
# checks the file that landed in the app group's container.
run_life_cycle() { # PROJECT-FOLDER LIBRARY MANIFEST APP-GROUP
    local project=$1 library=$2 manifest=$3 group=$4
    sed -i "s#https://assets.example.com#http://localhost:$port#" "$project/$manifest"
    sed -e "s#https://assets.example.com/$manifest#http://localhost:$port/$(basename "$project")-$manifest#" \
        -e "s#<string>assets.example.com</string>#<string>localhost</string>#" \
        "$project/Info.plist" > "$project/Info.loopback.plist"
    cp "$project/$manifest" "$work/www/$(basename "$project")-$manifest"
    (cd "$project" && bahost run --plugin "$library" --event install --info-plist Info.loopback.plist \
        --data-root "$work/data-$(basename "$project")" --allow-insecure-loopback) > "$work/run.log" 2>&1 || {
        cat "$work/run.log" >&2; fail "bahost run of $(basename "$project")"; }
    cmp -s "$work/data-$(basename "$project")/containers/$group/Assets/level-1" "$work/www/levels/level-1.pack" \
        || { cat "$work/run.log" >&2; fail "$(basename "$project"): level-1 did not land in $group's container"; }
    echo "   bahost run: level-1 landed in $group's container"
}

mkdir -p "$work/projects"
cd "$work/projects"

step "bahost new extension --c LevelsC: make, make test, bahost run"
bahost new extension --c LevelsC > /dev/null
(cd LevelsC && make -s && make -s test) || fail "the C project did not build or pass its test"
run_life_cycle "$work/projects/LevelsC" libLevelsC.so manifest.txt group.com.example.levelsc

step "bahost new extension --c --managed PacksC: make, make test, bahost pack package"
bahost new extension --c --managed PacksC > /dev/null
(cd PacksC && make -s && make -s test | tee "$work/check.out") || fail "the managed C project did not build or pass its test"
grep -q "shouldDownload: true" "$work/check.out" || fail "the managed C extension did not answer shouldDownload"
(cd PacksC && bahost pack package AssetPacks/Intro/Manifest.json -o "$work/intro.tar.zst" >/dev/null) \
    || fail "the scaffolded asset pack does not package"

step "bahost new extension --swift LevelsSwift (against $repo): swift build, swift test, bahost run"
bahost new extension --swift LevelsSwift --bahost-package "$repo" > /dev/null
(cd LevelsSwift && swift build > "$work/swift.log" 2>&1 && swift test >> "$work/swift.log" 2>&1) || {
    tail -40 "$work/swift.log" >&2; fail "the Swift project did not build or pass its test"; }
grep -q "Test answersTheInstallRequestWithinItsBudget() passed" "$work/swift.log" || fail "the Swift budget test did not run"
run_life_cycle "$work/projects/LevelsSwift" .build/debug/libLevelsSwift.so manifest.json group.com.example.levelsswift

step "bahost new extension --swift --managed PacksSwift: swift build, swift test"
bahost new extension --swift --managed PacksSwift --bahost-package "$repo" > /dev/null
(cd PacksSwift && swift build > "$work/swift.log" 2>&1 && swift test >> "$work/swift.log" 2>&1) || {
    tail -40 "$work/swift.log" >&2; fail "the managed Swift project did not build or pass its test"; }
grep -q "Test answersShouldDownloadWithinItsBudget() passed" "$work/swift.log" || fail "the managed Swift budget test did not run"

step "bahost new refuses what it cannot make"
bahost new extension --c 9lives > "$work/refusal" 2>&1 && fail "a name starting with a digit was accepted"
grep -q "starting with a letter" "$work/refusal" || fail "the refusal does not say why: $(cat "$work/refusal")"
bahost new extension --c LevelsC > "$work/refusal" 2>&1 && fail "an existing project was overwritten"
grep -q "exists and is not empty" "$work/refusal" || fail "the refusal does not say why: $(cat "$work/refusal")"

cd "$repo"
step "scripts/uninstall.sh: exactly what was installed"
echo "the user's own note" > "$prefix/share/doc/bahost/NOTE"
scripts/uninstall.sh --prefix "$prefix" > /dev/null
left=$(cd "$prefix" && find . | sort | tr '\n' ' ')
[ "$left" = ". ./share ./share/doc ./share/doc/bahost ./share/doc/bahost/NOTE " ] || fail "after uninstall: $left"
rm "$prefix/share/doc/bahost/NOTE"

step "scripts/install.sh --user and scripts/uninstall.sh --user"
home="$work/home"
mkdir -p "$home"
HOME="$home" env -u XDG_CONFIG_HOME scripts/install.sh --user --skip-build > "$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2; fail "install --user"; }
[ -x "$home/.local/bin/bahost" ] || fail "--user did not install into ~/.local"
grep -qx "ExecStart=$home/.local/bin/bahost daemon" "$home/.config/systemd/user/bahost.service" || fail "--user: no unit"
[ "$(readlink "$home/.config/systemd/user/sockets.target.wants/bahost.socket")" = "$home/.config/systemd/user/bahost.socket" ] \
    || fail "--user: bahost.socket is not enabled"
grep -qx 'ListenStream=%t/bahost/service.sock' "$home/.config/systemd/user/bahost.socket" || fail "--user: no socket unit"
HOME="$home" scripts/uninstall.sh --user > /dev/null
[ -z "$(ls -A "$home")" ] || fail "uninstall --user left: $(cd "$home" && find . | tr '\n' ' ')"
echo "PASS: install, scaffolds (C, Swift, managed), run under the installed bahost, uninstall"
