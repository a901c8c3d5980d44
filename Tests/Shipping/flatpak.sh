#!/usr/bin/env bash
# Flatpak apps, with real Flatpak (docs/PACKAGING.md, "Flatpak"): a runtime made here from a minimal Debian
# (debootstrap's /usr, exported to a local repository: no remote is reachable), and two apps built against it and
# installed from that repository with `flatpak --user`, while the service runs on the host with its defaults:
#   - com.example.levels carries bahost's app library, the C example app and its declaration
#     (files/share/bahost/com.example.levels: Info.plist, the extension) and no finish-args at all: installing it is
#     its install content request, its extension's essential asset lands in its container inside the sandbox's own
#     folder (~/.var/app/…), and `flatpak run` of it schedules a download, takes exclusive control and gets the
#     finished file in its delegate, moving it inside the sandbox;
#   - com.example.impostor is the same code declared as itself: claiming com.example.levels gets 55, and it cannot
#     see the first's container; a native process claiming the Flatpak app gets 55 too;
#   - `flatpak update` to a new build of the first is its update request; `flatpak uninstall` its uninstall.
# A machine whose Flatpak sandbox cannot run says why and exits 77 (scripts/test.sh reports it skipped; under CI it
# fails). Needs root (debootstrap). SKIP_BUILD=1 uses the release build the last install test made.
set -euo pipefail
cd "$(dirname "$0")/../.."

sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
work=$(mktemp -d /tmp/bahost-flatpak.XXXXXX)
daemon="" nginx=""
cleanup() {
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
    [ -n "$nginx" ] && kill "$nginx" 2>/dev/null
    # Flatpak's checkouts are read-only: make them removable first.
    chmod -R u+w "$work" 2>/dev/null || true
    $sudo rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$work/daemon.log" ] && tail -30 "$work/daemon.log" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }
step() { echo "== $*"; }
. Tests/Shipping/loopback-nginx.sh
. Tests/Shipping/clean-root.sh

command -v flatpak > /dev/null || skip "flatpak is not installed (scripts/install-dependencies.sh installs it)"

if [ -z "${SKIP_BUILD:-}" ]; then
    scripts/build-release.sh bahost bahost-extension-runner backgroundassets
fi
release=.build/release
for built in bahost bahost-extension-runner libbackgroundassets.so; do
    [ -x "$release/$built" ] || [ -f "$release/$built" ] || fail "no $release/$built: build the release first"
done

# Everything the user's session has, in the work folder: Flatpak's installation, the apps' own folders, the
# service's data, and a runtime folder (which the sandbox sees as /run/user/UID, whatever its path here).
home="$work/home" run="$work/run"
mkdir -p "$home" && mkdir -m 700 -p "$run"
export HOME="$home" XDG_RUNTIME_DIR="$run"
export XDG_DATA_DIRS="$work/no-system-data" FLATPAK_SYSTEM_DIR="$work/no-system-flatpak"
unset XDG_DATA_HOME XDG_CONFIG_HOME FLATPAK_USER_DIR BAHOST_SOCKET BAHOST_APP_IDENTIFIER
fp() { flatpak --user "$@"; }

step "a runtime from a minimal Debian: debootstrap's /usr, exported to a local repository"
make_clean_root "$work/debian" "$work/debootstrap.log"
runtime=org.bahost.TestPlatform
mkdir -p "$work/runtime"
mv "$work/debian/usr" "$work/runtime/usr"
$sudo rm -rf "$work/debian"
printf '[Runtime]\nname=%s\nruntime=%s/x86_64/1\nsdk=%s/x86_64/1\n' "$runtime" "$runtime" "$runtime" > "$work/runtime/metadata"
repo="$work/repo"
flatpak build-export --runtime --files=usr "$repo" "$work/runtime" 1 > "$work/export.log" 2>&1 || fail "export the runtime"
rm -rf "$work/runtime"
flatpak build-update-repo "$repo" > /dev/null || fail "build-update-repo"
fp remote-add --no-gpg-verify local "file://$repo" || fail "flatpak remote-add"
fp install -y --noninteractive local "$runtime//1" > "$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2; fail "install the runtime"; }

step "the apps: the C example app with bahost's library, declared in their own files; no finish-args"
www="$work/www"
mkdir -p "$www"
head -c 4096 /dev/urandom > "$www/level-1.pack"
head -c 8192 /dev/urandom > "$www/level-2.pack"
head -c 30000 /dev/urandom > "$www/bonus.pack"
# nginx's workers read the assets as another user: they may pass through $work, and read $www.
chmod a+x "$work"
chmod -R a+rX "$www"
start_loopback_nginx "$work/nginx" "$www" || fail "nginx"
nginx=$nginx_pid port=$nginx_port
printf 'level-1 4096 essential http://127.0.0.1:%s/level-1.pack\nlevel-2 8192 optional http://127.0.0.1:%s/level-2.pack\n' \
    "$port" "$port" > "$www/manifest.txt"
# The library under its soname, which the app is linked against: in the Flatpak's /app/lib, and here for the native
# process of the test.
mkdir -p "$work/lib"
soname=$(readelf -d "$release/libbackgroundassets.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
cp "$release/libbackgroundassets.so" "$work/lib/$soname"
cc -Wall -Werror -I SDK/C/include -o "$work/levels-app" Plugins/C/apps/levels_app.c -L "$release" -lbackgroundassets \
    -Wl,-rpath,/app/lib || fail "build levels-app"
cc -shared -fPIC -Wall -Werror -I SDK/C/include -o "$work/levels.so" Plugins/C/example_extension.c || fail "build the extension"
build_app() {  # ID GROUP VERSION BRANCH_COMMIT_NOTE
    local id=$1 group=$2 version=$3 app="$work/build-$1-$3"
    rm -rf "$app"
    flatpak build-init "$app" "$id" "$runtime" "$runtime" 1 > /dev/null || fail "build-init $id"
    mkdir -p "$app/files/bin" "$app/files/lib" "$app/files/share/bahost/$id"
    cp "$work/levels-app" "$app/files/bin/levels-app"
    cp "$work/lib/"* "$app/files/lib/"
    cp "$work/levels.so" "$app/files/share/bahost/$id/levels.so"
    cat > "$app/files/share/bahost/$id/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
    <key>CFBundleIdentifier</key><string>$id</string>
    <key>CFBundleVersion</key><string>$version</string>
    <key>BAAppGroupID</key><string>$group</string>
    <key>BAManifestURL</key><string>http://127.0.0.1:$port/manifest.txt</string>
    <key>BAHostExtension</key><string>levels.so</string>
    <key>BAMaxInstallSize</key><integer>104857600</integer>
    <key>BAInitialDownloadRestrictions</key>
    <dict>
        <key>BADownloadAllowance</key><integer>104857600</integer>
        <key>BAEssentialDownloadAllowance</key><integer>52428800</integer>
        <key>BADownloadDomainAllowList</key><array><string>127.0.0.1</string></array>
    </dict>
</dict>
</plist>
PLIST
    # The whole of what the app asks of Flatpak: its command. No --filesystem, no --socket, no --talk-name.
    flatpak build-finish --command=levels-app "$app" > /dev/null || fail "build-finish $id"
    flatpak build-export "$repo" "$app" stable > /dev/null 2>&1 || fail "build-export $id $version"
}
build_app com.example.levels group.com.example.levels 1
build_app com.example.impostor group.com.example.impostor 1
flatpak build-update-repo "$repo" > /dev/null || fail "build-update-repo"

step "can Flatpak's sandbox run here?"
fp install -y --noninteractive local com.example.impostor > "$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2; fail "install com.example.impostor"; }
if ! fp run --command=true com.example.impostor 2> "$work/probe.err"; then
    skip "flatpak run cannot start a sandbox on this machine: $(head -3 "$work/probe.err")"
fi

step "the service, on the host with its defaults"
status() { "$release/bahost" debug status --json 2>/dev/null; }
last_actions() {
    status | python3 -c 'import json, sys; print("\n".join(json.load(sys.stdin)["declaredApps"].get("lastActions", [])))' \
        2>/dev/null || true
}
wait_for_action() {  # TEXT: waits until an action of the last reconciliation holds it
    for _ in $(seq 300); do
        last_actions | grep -qF "$1" && return 0
        sleep 0.1
    done
    echo "the service's last actions: $(last_actions)" >&2
    "$release/bahost" debug status >&2 || true
    tail -40 "$work/daemon.log" >&2
    fail "no '$1' from the service"
}
"$release/bahost" daemon --allow-insecure-loopback --settle-seconds 0.5 --removal-grace-seconds 2 \
    > "$work/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 200); do status > /dev/null && break; sleep 0.1; done
status | grep -qF "$home/.local/share/flatpak" || fail "debug status does not name the user's Flatpak installation: $(status)"
wait_for_action "installed com.example.impostor 1"

step "flatpak install com.example.levels: its install request; the essential asset lands inside its own folder"
fp install -y --noninteractive local com.example.levels > "$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2; fail "install com.example.levels"; }
wait_for_action "installed com.example.levels 1"
metadata="$home/.local/share/flatpak/app/com.example.levels/current/active/metadata"
grep -q '^name=com.example.levels$' "$metadata" || fail "no installed metadata at $metadata"
grep -qE '^\[Context\]|filesystems=|sockets=|talk-name|shared=' "$metadata" \
    && fail "the app's metadata asks for permissions: $(cat "$metadata")"
container="$home/.var/app/com.example.levels/data/bahost/containers/group.com.example.levels"
for _ in $(seq 100); do [ -f "$container/Assets/level-1" ] && break; sleep 0.1; done
cmp "$container/Assets/level-1" "$www/level-1.pack" || fail "the extension's essential asset is not in the app's container"
[ -S "$run/app/com.example.levels/bahost.sock" ] || fail "no socket in the app's \$XDG_RUNTIME_DIR/app/com.example.levels"
[ -e "$home/.local/share/bahost/containers/group.com.example.levels" ] && fail "a container outside the sandbox's folder"

step "flatpak run com.example.levels: schedule, exclusive control, the delegate's file moved inside the sandbox"
fp run com.example.levels --json --exclusive-control 2000 --schedule "bonus=http://127.0.0.1:$port/bonus.pack@30000" \
    --wait-for 1 --timeout 30 > "$work/levels.out" 2> "$work/levels.err" \
    || { cat "$work/levels.out" "$work/levels.err" >&2; fail "the Flatpak app"; }
grep -q '"event":"exclusiveControl","acquired":true' "$work/levels.out" \
    || fail "no exclusive control inside the sandbox: $(cat "$work/levels.out")"
grep -q '"event":"schedule","identifier":"bonus","ok":true' "$work/levels.out" \
    || fail "the schedule was not accepted: $(cat "$work/levels.out")"
grep -qF "\"event\":\"finished\",\"identifier\":\"bonus\",\"path\":\"$container/Assets/bonus\"" "$work/levels.out" \
    || fail "the delegate did not move the file inside the sandbox: $(cat "$work/levels.out")"
cmp "$container/Assets/bonus" "$www/bonus.pack" || fail "the file the app moved is not the asset"
fp run --command=sha256sum com.example.levels "$container/Assets/bonus" > "$work/inside.out" 2>&1 \
    || fail "the app cannot read its file inside the sandbox: $(cat "$work/inside.out")"
[ "$(cut -d' ' -f1 "$work/inside.out")" = "$(sha256sum < "$www/bonus.pack" | cut -d' ' -f1)" ] \
    || fail "inside the sandbox the file is not the asset: $(cat "$work/inside.out")"
grep -q 'app=com.example.levels.*flatpak=[0-9].*app connected' "$work/daemon.log" \
    || fail "the service did not log the app's connection"

step "com.example.impostor claiming com.example.levels: 55, and it cannot see the other's folder"
fp run --env=BAHOST_APP_IDENTIFIER=com.example.levels com.example.impostor --json \
    --schedule "stolen=http://127.0.0.1:$port/bonus.pack@30000" --timeout 5 > "$work/impostor.out" 2>&1 || true
grep -q '"event":"schedule","identifier":"stolen","ok":false,"error":"BAErrorDomain 55: ' "$work/impostor.out" \
    || fail "the impostor was not refused with 55: $(cat "$work/impostor.out")"
grep -q 'a Flatpak acts only as itself' "$work/impostor.out" || fail "the refusal does not name the rule: $(cat "$work/impostor.out")"
grep -q 'refused a Flatpak: a Flatpak acts only as itself' "$work/daemon.log" || fail "the service did not log the refusal"
fp run --command=sh com.example.impostor -c "ls '$home/.var/app/com.example.levels'" > "$work/peek.out" 2>&1 \
    && fail "the impostor sees the other app's folder: $(cat "$work/peek.out")"
fp run --command=sh com.example.impostor -c "ls /run/user/$(id -u)/app/com.example.levels" \
    > "$work/peek.out" 2>&1 && fail "the impostor sees the other app's socket folder: $(cat "$work/peek.out")"
"$release/bahost" debug downloads --app com.example.levels | grep -q stolen && fail "the impostor's download was queued"

step "a native process claiming the Flatpak app: 55, on the service's socket and on the app's"
LD_LIBRARY_PATH="$work/lib" BAHOST_APP_IDENTIFIER=com.example.levels "$work/levels-app" --json \
    --schedule "stolen=http://127.0.0.1:$port/bonus.pack@30000" --timeout 5 > "$work/native.out" 2>&1 || true
grep -q 'is a Flatpak app: only a process inside its sandbox' "$work/native.out" \
    || fail "a native process was not refused: $(cat "$work/native.out")"
LD_LIBRARY_PATH="$work/lib" BAHOST_APP_IDENTIFIER=com.example.levels \
    BAHOST_SOCKET="$run/app/com.example.levels/bahost.sock" "$work/levels-app" --json --schedule "stolen=http://127.0.0.1:$port/bonus.pack@30000" --timeout 5 \
    > "$work/native.out" 2>&1 || true
grep -q "this socket is the Flatpak com.example.levels's" "$work/native.out" \
    || fail "a native process was let in on the app's socket: $(cat "$work/native.out")"

step "flatpak update to a new build: its update request"
build_app com.example.levels group.com.example.levels 2
flatpak build-update-repo "$repo" > /dev/null || fail "build-update-repo"
fp update -y --noninteractive com.example.levels > "$work/update.log" 2>&1 || {
    cat "$work/update.log" >&2; fail "flatpak update"; }
wait_for_action "updated com.example.levels 1 → 2"
grep -q 'app=com.example.levels purpose=update content request .*stop=returned .*window' "$work/daemon.log" \
    || fail "the extension got no update request"

step "flatpak uninstall: uninstalled, its container and socket with it"
fp uninstall -y --noninteractive com.example.levels > "$work/uninstall.log" 2>&1 || {
    cat "$work/uninstall.log" >&2; fail "flatpak uninstall"; }
wait_for_action "uninstalled com.example.levels"
[ -e "$container" ] && fail "the app's container is still there after it was uninstalled"
for _ in $(seq 50); do [ -e "$run/app/com.example.levels/bahost.sock" ] || break; sleep 0.1; done
[ -e "$run/app/com.example.levels/bahost.sock" ] && fail "the app's socket is still there after it was uninstalled"
"$release/bahost" debug status | grep -q "com.example.impostor" || fail "the other app went too"
echo "PASS: Flatpak apps"
