# Sourced by Tests/Shipping/deb.sh, in its clean root with bahost installed: an app's own package, installed,
# upgraded and removed with apt while the service runs as a user, does what the App Store's install, update and
# removal do on Apple, with nobody typing a bahost command:
#   - apt-get install ./levels-app_1.0….deb: the service installs the app and sends its extension the install
#     request; `bahost launch` (what the app's .desktop entry runs) returns once the essential asset has landed;
#   - apt-get install ./levels-app_1.1….deb: the update request;
#   - apt-get remove levels-app: uninstalled, its assets with it.
# The assets come from nginx on loopback (plain http: the service runs with --allow-insecure-loopback).
# Uses deb.sh's $work, $root, $sudo, in_root, step and fail.
. Tests/Shipping/loopback-nginx.sh

declared_app_daemon="" declared_app_nginx=""
declared_app_cleanup() {
    [ -n "$declared_app_daemon" ] && $sudo kill "$declared_app_daemon" 2>/dev/null
    [ -n "$declared_app_nginx" ] && kill "$declared_app_nginx" 2>/dev/null
    true
}

test_declared_app() {
    local player=4242 port www="$work/www" runtime="/run/user/4242"
    as_player() {
        $sudo chroot --userspec=$player:$player "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
            HOME=/home/player XDG_RUNTIME_DIR=$runtime LANG=C.UTF-8 "$@"
    }
    # The service's status, as JSON, read on this side (python3 is not in the clean root).
    last_actions() {
        as_player bahost debug status --json 2>/dev/null \
            | python3 -c 'import json, sys; print("\n".join(json.load(sys.stdin)["declaredApps"].get("lastActions", [])))' \
            2>/dev/null || true
    }
    wait_for_action() {  # PREFIX: waits until the last reconciliation's first action starts with it
        for _ in $(seq 200); do
            last_actions | head -1 | grep -qF "$1" && return 0
            sleep 0.1
        done
        echo "the service's last actions: $(last_actions)" >&2
        echo "its status:" >&2
        as_player bahost debug status >&2 || true
        tail -40 "$work/declared-daemon.log" >&2
        fail "no '$1' from the service"
    }

    step "the assets on nginx, on loopback"
    mkdir -p "$www"
    head -c 4096 /dev/urandom > "$www/level-1.pack"
    head -c 8192 /dev/urandom > "$www/level-2.pack"
    start_loopback_nginx "$work/nginx" "$www" || fail "nginx"
    declared_app_nginx=$nginx_pid
    port=$nginx_port
    printf 'level-1 4096 essential http://127.0.0.1:%s/level-1.pack\nlevel-2 8192 optional http://127.0.0.1:%s/level-2.pack\n' \
        "$port" "$port" > "$www/manifest.txt"
    # nginx's workers read the assets as another user: they may pass through $work, and read $www (not the root).
    chmod a+x "$work"
    chmod -R a+rX "$www"

    step "scripts/package-example-app.sh: levels-app 1.0 and 1.1"
    # The first builds levels-app in release (the bahost release install.sh made has none); the second reuses it.
    local skip="" version
    for version in 1.0 1.1; do
        scripts/package-example-app.sh --version "$version" --manifest-url "http://127.0.0.1:$port/manifest.txt" \
            --output "$work/app" $skip > "$work/app-$version.out" || fail "package-example-app.sh $version"
        skip=--skip-build
    done
    local deb10 deb11
    deb10=$(tail -1 "$work/app-1.0.out") deb11=$(tail -1 "$work/app-1.1.out")
    # Listed whole before it is searched: `grep -q` leaves at the first match, and under pipefail the listing's
    # writer, cut off by it, failed the check it had passed.
    local contents
    contents=$(dpkg-deb --contents "$deb10") || fail "dpkg-deb --contents $deb10"
    grep -q "usr/share/bahost/apps/com.example.levels/Info.plist" <<< "$contents" || fail "no declaration"
    $sudo cp "$deb10" "$deb11" "$root/tmp/"

    step "the service, as a user of the root"
    in_root useradd -m -u $player player
    in_root mkdir -p $runtime
    in_root chown $player:$player $runtime
    in_root chmod 700 $runtime
    $sudo chroot --userspec=$player:$player "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/home/player XDG_RUNTIME_DIR=$runtime LANG=C.UTF-8 \
        bahost daemon --allow-insecure-loopback --settle-seconds 0.5 --removal-grace-seconds 2 \
        > "$work/declared-daemon.log" 2>&1 &
    declared_app_daemon=$!
    for _ in $(seq 200); do as_player bahost debug status >/dev/null 2>&1 && break; sleep 0.1; done
    as_player bahost debug status | grep -q "declared apps: in /home/player/.local/share/bahost/apps, /usr/local/share/bahost/apps, /usr/share/bahost/apps" \
        || fail "debug status does not say where apps are declared: $(as_player bahost debug status)"

    step "apt-get install ./$(basename "$deb10"): the install request, and the launch waits for the essential asset"
    in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "/tmp/$(basename "$deb10")" >> "$work/apt.log" 2>&1 \
        || { tail -20 "$work/apt.log" >&2; fail "apt-get install of levels-app 1.0"; }
    wait_for_action "installed com.example.levels 1.0"
    local assets=/home/player/.local/share/bahost/containers/group.com.example.levels/Assets
    # What the .desktop entry runs: bahost launch returns once level-1 has landed, then runs the app as the app.
    grep -q "^Exec=bahost launch com.example.levels -- levels-app" "$root/usr/share/applications/com.example.levels.desktop" \
        || fail "the .desktop entry does not launch through bahost"
    as_player bahost launch com.example.levels -- levels-app --list --json > "$work/launch.out" 2>&1 \
        || { cat "$work/launch.out" >&2; fail "bahost launch com.example.levels -- levels-app"; }
    cmp "$root$assets/level-1" "$www/level-1.pack" || fail "the essential asset did not land before the launch returned"
    grep -q '"event":"currentDownloads","identifiers"' "$work/launch.out" || fail "levels-app, run as the app, did not list its downloads: $(cat "$work/launch.out")"

    step "apt-get install ./$(basename "$deb11"): the update request"
    in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "/tmp/$(basename "$deb11")" >> "$work/apt.log" 2>&1 \
        || { tail -20 "$work/apt.log" >&2; fail "apt-get install of levels-app 1.1"; }
    wait_for_action "updated com.example.levels 1.0 → 1.1"

    step "apt-get remove levels-app: uninstalled, its assets with it"
    in_root env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq levels-app >> "$work/apt.log" 2>&1 \
        || fail "apt-get remove levels-app"
    wait_for_action "uninstalled com.example.levels"
    [ -e "$root$assets/level-1" ] && fail "the app's assets are still there after it was removed"
    $sudo kill "$declared_app_daemon"; wait "$declared_app_daemon" 2>/dev/null || true
    declared_app_daemon=""
    kill "$declared_app_nginx"; wait "$declared_app_nginx" 2>/dev/null || true
    declared_app_nginx=""
    echo "PASS: an app's package, installed, upgraded and removed with apt, fired install, update and uninstall"
}
