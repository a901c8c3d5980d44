#!/usr/bin/env bash
# The main job end to end: builds bahost, the Swift example extension and the example app, starts a local HTTPS
# asset server (nginx with a certificate authority made here), and runs the app's whole install life cycle twice:
# once with `bahost run` (the manifest named by its Info.plist, the extension's content request, policy, the
# downloads, essential first, and each finished file delivered back to the extension, which keeps it in the app
# group's container), then with the service: `bahost daemon`, `bahost install`, and `bahost launch` running the
# example app, whose BADownloadManager delegate schedules a download and receives it, and its twins in C (ba/app.h)
# and Python (SDK/Python), which do the same through libbackgroundassets. Then managed asset packs:
# `bahost pack` packages two packs, `bahost serve` serves them, the service installs a managed app (its essential
# pack before the install returns), and the managed example app reads and downloads packs with AssetPackManager.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-dependencies.sh
swift build
bin=$(swift build --show-bin-path)

demo=$(mktemp -d /tmp/bahost-demo.XXXXXX)
chmod 755 "$demo"  # nginx's workers read the assets as another user
mkdir -p "$demo/www/levels" "$demo/logs" "$demo/tmp"
nginx_pid=""
daemon_pid=""
trap '[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null; [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null; true' EXIT

echo "== a certificate authority, and a certificate for localhost"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$demo/ca.key" -out "$demo/ca.pem" -days 1 \
    -subj "/CN=bahost demo CA" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$demo/server.key" -out "$demo/server.csr" -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$demo/server.ext"
openssl x509 -req -in "$demo/server.csr" -CA "$demo/ca.pem" -CAkey "$demo/ca.key" -CAcreateserial \
    -out "$demo/server.pem" -days 1 -extfile "$demo/server.ext" 2>/dev/null

port=""
for candidate in $(shuf -i 20000-60000 -n 50); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then port=$candidate; break; fi
done
[ -n "$port" ] || { echo "no free port" >&2; exit 1; }

echo "== assets, a manifest and the app's Info.plist, served by nginx on https://localhost:$port"
head -c 2097152 /dev/urandom > "$demo/www/levels/level-1.pack"
head -c 6291456 /dev/urandom > "$demo/www/levels/level-2.pack"
head -c 4194304 /dev/urandom > "$demo/www/levels/soundtrack.pack"
head -c 3145728 /dev/urandom > "$demo/www/levels/bonus.pack"
sha() { sha256sum "$1" | cut -d' ' -f1; }
cat > "$demo/www/manifest.json" <<JSON
{"assets": [
  {"id": "level-1", "url": "https://localhost:$port/levels/level-1.pack", "size": 2097152, "essential": true,
   "sha256": "$(sha "$demo/www/levels/level-1.pack")"},
  {"id": "level-2", "url": "https://localhost:$port/levels/level-2.pack", "size": 6291456},
  {"id": "soundtrack", "url": "https://localhost:$port/levels/soundtrack.pack", "size": 4194304}
]}
JSON
sed -e "s#https://assets.example.com/manifest.json#https://localhost:$port/manifest.json#" \
    -e "s#<string>assets.example.com</string>#<string>localhost</string>#" \
    Plugins/Examples/Info.plist > "$demo/Info.plist"
cat > "$demo/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $demo/nginx.pid;
error_log $demo/logs/error.log;
events { worker_connections 64; }
http {
    access_log $demo/logs/access.log;
    client_body_temp_path $demo/tmp; proxy_temp_path $demo/tmp; fastcgi_temp_path $demo/tmp;
    uwsgi_temp_path $demo/tmp; scgi_temp_path $demo/tmp;
    server {
        listen 127.0.0.1:$port ssl;
        ssl_certificate $demo/server.pem;
        ssl_certificate_key $demo/server.key;
        root $demo/www;
    }
}
NGINX
nginx -c "$demo/nginx.conf" -p "$demo" </dev/null >/dev/null 2>&1 &
nginx_pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done

echo
echo "== bahost run: the install life cycle of com.example.levels with the Swift example extension"
"$bin/bahost" run --plugin "$bin/libExampleExtension.so" --event install --info-plist "$demo/Info.plist" \
    --data-root "$demo/data" --ca-file "$demo/ca.pem"

echo
echo "== what landed in the app group's container"
assets="$demo/data/containers/group.com.example.levels/Assets"
for name in level-1 level-2 soundtrack; do
    if cmp -s "$assets/$name" "$demo/www/levels/$name.pack"; then
        echo "  $assets/$name  $(stat -c %s "$assets/$name") bytes, identical to the server's"
    else
        echo "  $name: MISSING or different" >&2
        exit 1
    fi
done

echo
echo "== bahost daemon: the per-user service, on a socket of the demo's"
mkdir -p "$demo/app"
cp "$demo/Info.plist" "$bin/libExampleExtension.so" "$demo/app/"
socket="$demo/service.sock"
"$bin/bahost" daemon --socket "$socket" --data-root "$demo/service-data" --ca-file "$demo/ca.pem" \
    2> "$demo/logs/daemon.log" &
daemon_pid=$!
for _ in $(seq 200); do [ -S "$socket" ] && break; sleep 0.05; done

echo
echo "== bahost install: the app's folder (Info.plist and extension); it returns when the essential downloads are done"
"$bin/bahost" install "$demo/app" --socket "$socket"

echo
echo "== bahost launch, running the example app: its delegate schedules a download and receives what completes"
"$bin/bahost" launch com.example.levels --socket "$socket" -- "$bin/levels-app" --list --wait-for 1 \
    --schedule "bonus=https://localhost:$port/levels/bonus.pack@3145728"

echo
echo "== the same app in C (ba/app.h, callbacks from its own poll loop), built with cc against libbackgroundassets"
mkdir -p "$demo/lib" && ln -sf "$bin/libbackgroundassets.so" "$demo/lib/libbackgroundassets.so.1"
cc -Wall -I SDK/C/include -o "$demo/levels-app-c" Plugins/C/apps/levels_app.c -L "$bin" -lbackgroundassets \
    -Wl,-rpath,"$demo/lib"
"$bin/bahost" launch com.example.levels --socket "$socket" -- "$demo/levels-app-c" --list --wait-for 1 \
    --schedule "bonus-c=https://localhost:$port/levels/bonus.pack@3145728"

echo
echo "== and in Python (the backgroundassets package: ctypes over the same library)"
BACKGROUNDASSETS_LIBRARY="$bin/libbackgroundassets.so" PYTHONPATH=SDK/Python \
    "$bin/bahost" launch com.example.levels --socket "$socket" -- python3 Plugins/Python/levels_app.py --list \
    --wait-for 1 --schedule "bonus-python=https://localhost:$port/levels/bonus.pack@3145728"

echo
echo "== bahost debug downloads and status"
for _ in $(seq 200); do
    # Taken whole, then searched: a listing cut off by `grep -q` would fail under pipefail and end the wait early.
    downloads=$("$bin/bahost" debug downloads --app com.example.levels --socket "$socket" --json) || break
    grep -q '"state":"downloading"\|"state":"queued"' <<< "$downloads" || break
    sleep 0.1
done
"$bin/bahost" debug downloads --app com.example.levels --socket "$socket"
"$bin/bahost" debug status --socket "$socket"

echo
echo "== managed asset packs: bahost pack describes and packages two packs"
packs="$demo/packs"
mkdir -p "$packs/intro/intro" "$packs/bonus/bonus"
echo "Welcome to level 1" > "$packs/intro/intro/readme.txt"
head -c 1048576 /dev/urandom > "$packs/intro/intro/level-1.bin"
echo "A bonus level" > "$packs/bonus/bonus/readme.txt"
cat > "$packs/intro/Manifest.json" <<JSON
{"assetPackID": "intro", "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation"]}},
 "fileSelectors": [{"directory": "intro"}], "platforms": [], "userInfo": {"title": "Intro"}}
JSON
cat > "$packs/bonus/Manifest.json" <<JSON
{"assetPackID": "bonus", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "bonus"}]}
JSON
"$bin/bahost" pack package "$packs/intro/Manifest.json" -o "$packs/intro.tar.zst"
"$bin/bahost" pack package "$packs/bonus/Manifest.json" -o "$packs/bonus.tar.zst"

echo
echo "== bahost serve: the packs and their download manifest over HTTPS (Apple's ba-serve)"
"$bin/bahost" serve --host localhost --port 0 --cert "$demo/server.pem" --key "$demo/server.key" --json \
    "$packs/intro.tar.zst" "$packs/bonus.tar.zst" > "$demo/serve.out" 2> "$demo/logs/serve.log" &
serve_pid=$!
trap '[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null; [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null; kill "$serve_pid" 2>/dev/null; true' EXIT
for _ in $(seq 200); do [ -s "$demo/serve.out" ] && break; sleep 0.05; done
download_manifest=$(sed -n 's/.*"manifestURL":"\([^"]*\)".*/\1/p' "$demo/serve.out")
echo "  $download_manifest"

echo
echo "== bahost install of a managed app (BAHasManagedAssetPacks): it returns once the essential pack is installed"
mkdir -p "$demo/managed-app"
cp "$bin/libManagedExampleExtension.so" "$demo/managed-app/"
cat > "$demo/managed-app/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
  <key>CFBundleIdentifier</key><string>com.example.packs</string>
  <key>BAAppGroupID</key><string>group.com.example.packs</string>
  <key>BAHasManagedAssetPacks</key><true/>
  <key>BAManifestURL</key><string>$download_manifest</string>
  <key>BAInitialDownloadRestrictions</key><dict>
    <key>BADownloadAllowance</key><integer>104857600</integer>
    <key>BAEssentialDownloadAllowance</key><integer>104857600</integer>
    <key>BADownloadDomainAllowList</key><array><string>localhost</string></array>
  </dict>
  <key>BAMaxInstallSize</key><integer>104857600</integer>
</dict></plist>
PLIST
"$bin/bahost" install "$demo/managed-app" --socket "$socket"
"$bin/bahost" debug packs --app com.example.packs --socket "$socket"

echo
echo "== bahost launch, running the managed example app: AssetPackManager reads the essential pack, downloads the"
echo "   on-demand one (with its status updates), and reads it"
"$bin/bahost" launch com.example.packs --socket "$socket" -- "$bin/packs-app" --list --status intro \
    --read intro/readme.txt --ensure bonus --read bonus/readme.txt | tee "$demo/packs-app.out"
grep -q '"text":"A bonus level' "$demo/packs-app.out" || { echo "the on-demand pack was not read" >&2; exit 1; }
"$bin/bahost" debug packs --app com.example.packs --socket "$socket"

kill -TERM "$daemon_pid"
wait "$daemon_pid"
daemon_pid=""
echo
echo "== the service stopped on SIGTERM; its log:"
cat "$demo/logs/daemon.log"
