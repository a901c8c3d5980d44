#!/usr/bin/env bash
# Machines of one household share a game's packs (docs/PEERS.md), tested as they would meet it: network namespaces
# on one bridge (the LAN, unshaped), each machine with its own `bahost daemon` and data root, and a CDN (nginx, TLS)
# behind a router namespace whose link to the LAN is a 20 Mbit/s `tbf` bottleneck. Asserts, in order:
#   1. A installs an app that shares its packs: the archive comes through the swarm, the CDN as web seed.
#   2. B installs it after: byte-identical files, and most of its bytes from A (nginx's log counts what B fetched).
#   3. An app that did not allow sharing: B fetches its whole archive from the CDN, none from a peer.
#   4. A peer that lies (Tests/Peers/lying-peer.py) is banned; nothing corrupt is written.
#   5. A killed in the middle of B's download: B finishes from the web seed.
#   6. A on battery (UPower, python3-dbusmock on A's own bus) serves nobody.
#   7. "My own machines": A and B paired, D of another household: B takes from A over TLS, D gets nothing.
# Needs root and network namespaces: without them it says SKIPPED and exits 77, which CI counts as a failure.
#
#   Tests/Peers/lan.sh                          the test (a 16 MiB pack)
#   Tests/Peers/lan.sh --size BYTES --record F  the benchmark's figures (Benchmarks/run.sh peers): 1, 2 and 4 with a
#                                               pack of BYTES, and the serving machine's upload under peers.upload
#                                               2M while its user downloads; "name value" lines appended to F
set -euo pipefail
size=$((16 << 20))
record=""
while [ $# -gt 0 ]; do
    case $1 in
        --size) size=$2; shift 2 ;;
        --record) record=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "lan.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
[[ "$size" =~ ^[0-9]+$ ]] && [ "$size" -ge 65536 ] || { echo "lan.sh: --size must be 64 KiB or more" >&2; exit 64; }
figure() { [ -z "$record" ] || echo "$1 $2" >> "$record"; }
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/Tests/Peers"
[ "$(id -u)" -eq 0 ] || { echo "SKIPPED: lan.sh needs root (network namespaces)" >&2; exit 77; }
ip netns add peer-probe 2>/dev/null && ip netns del peer-probe \
    || { echo "SKIPPED: lan.sh cannot make network namespaces here" >&2; exit 77; }
for tool in nginx openssl dbus-daemon gdbus tc cc curl; do
    command -v "$tool" > /dev/null || { echo "FAIL: lan.sh needs $tool (scripts/install-dependencies.sh)" >&2; exit 1; }
done
bin="${BAHOST_BIN:-$root/.build/debug}"
bahost="$bin/bahost"
[ -x "$bahost" ] || { echo "FAIL: no $bahost (swift build first)" >&2; exit 1; }

work=$(mktemp -d /tmp/bahost-lan.XXXXXX)
chmod 755 "$work"  # nginx's workers (nobody) read www
namespaces=(lan router cdn a b c d)
declare -A daemons=()
cleanup() {
    for name in "${!daemons[@]}"; do kill -9 "${daemons[$name]}" 2>/dev/null || true; done
    for ns in "${namespaces[@]}"; do
        ip netns pids "peer-$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        ip netns del "peer-$ns" 2>/dev/null || true
        rm -rf "/etc/netns/peer-$ns"
    done
}
trap 'status=$?; cleanup; [ $status -eq 0 ] && rm -rf "$work" || echo "lan.sh: kept $work"' EXIT
cleanup

fail() {
    echo "FAIL: $*" >&2
    for log in "$work"/*/daemon.log; do echo "--- $log" >&2; tail -25 "$log" >&2; done
    exit 1
}

# --- The network: a bridge for the LAN; a router between it and the CDN, shaping what reaches the LAN.
ip netns add peer-lan
ip -n peer-lan link add br0 type bridge
ip -n peer-lan link set br0 type bridge mcast_snooping 0
ip -n peer-lan link set br0 up
attach() {  # NAMESPACE ADDRESS: a machine's eth0 on the bridge
    local ns=$1 address=$2
    ip netns add "peer-$ns"
    ip link add "pl-$ns" netns peer-lan type veth peer name eth0 netns "peer-$ns"
    ip -n peer-lan link set "pl-$ns" master br0 up
    ip -n "peer-$ns" addr add "$address/24" dev eth0
    ip -n "peer-$ns" link set eth0 up
    ip -n "peer-$ns" link set lo up
}
attach router 10.77.0.254
ip netns add peer-cdn
ip link add eth1 netns peer-router type veth peer name eth0 netns peer-cdn
ip -n peer-router addr add 10.78.0.1/24 dev eth1
ip -n peer-router link set eth1 up
ip -n peer-cdn addr add 10.78.0.2/24 dev eth0
ip -n peer-cdn link set eth0 up
ip -n peer-cdn link set lo up
ip -n peer-cdn route add default via 10.78.0.1
ip netns exec peer-router sysctl -qw net.ipv4.ip_forward=1
# The household's line: what the CDN sends toward the LAN passes 20 Mbit/s.
ip netns exec peer-router tc qdisc add dev eth0 root tbf rate 20mbit burst 64kb latency 200ms
n=1
for machine in a b c d; do
    attach "$machine" "10.77.0.$n"
    ip -n "peer-$machine" route add default via 10.77.0.254
    ip -n "peer-$machine" route add 224.0.0.0/4 dev eth0
    mkdir -p "/etc/netns/peer-$machine"
    printf '127.0.0.1 localhost\n10.78.0.2 cdn.lan.test\n' > "/etc/netns/peer-$machine/hosts"
    n=$((n + 1))
done

# --- The CDN: nginx over TLS, its certificate from a CA of the test's own, logging the bytes it sends each client.
cd "$work"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=lan test CA" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout cdn.key -out cdn.csr -subj "/CN=cdn.lan.test" 2>/dev/null
printf 'subjectAltName=DNS:cdn.lan.test\n' > cdn.ext
openssl x509 -req -in cdn.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cdn.pem -days 2 -extfile cdn.ext \
    2>/dev/null
mkdir -p www/packs nginx/logs nginx/tmp
cat > nginx/nginx.conf <<NGINX
daemon off;
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log;
events { worker_connections 256; }
http {
    log_format sent '\$remote_addr \$status \$body_bytes_sent "\$request"';
    access_log $work/nginx/logs/access.log sent;
    client_body_temp_path $work/nginx/tmp; proxy_temp_path $work/nginx/tmp; fastcgi_temp_path $work/nginx/tmp;
    uwsgi_temp_path $work/nginx/tmp; scgi_temp_path $work/nginx/tmp;
    server {
        listen 10.78.0.2:443 ssl;
        ssl_certificate $work/cdn.pem;
        ssl_certificate_key $work/cdn.key;
        root $work/www;
    }
}
NGINX
ip netns exec peer-cdn nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" </dev/null >/dev/null 2>&1 &
daemons[nginx]=$!

# --- The pack: random bytes (incompressible: the archive is as large), essential on first install.
mkdir -p pack/world
head -c "$size" /dev/urandom > pack/world/blob.bin 2>/dev/null || dd if=/dev/urandom of=pack/world/blob.bin \
    bs=1M count=$((size >> 20)) status=none
cat > pack/Manifest.json <<JSON
{"assetPackID": "world", "downloadPolicy": {"essential": {"installationEventTypes": ["firstInstallation"]}},
 "fileSelectors": [{"directory": "world"}]}
JSON
"$bahost" pack package pack/Manifest.json -o world.tar.zst > /dev/null
cp world.tar.zst www/packs/world
"$bahost" pack download-manifest create world.tar.zst --download-base-url https://cdn.lan.test/packs/ \
    --output-path www/download-manifest.json > /dev/null
archive=$(stat -c %s world.tar.zst)
grep -q '"bittorrent"' www/download-manifest.json || fail "the download manifest has no BitTorrent hashes"
for _ in $(seq 100); do
    ip netns exec peer-a bash -c 'exec 3<>/dev/tcp/10.78.0.2/443' 2>/dev/null && break
    sleep 0.1
done

# Two apps on the same manifest: one allows sharing, one does not. Their extension is the C example (a managed app's
# extension that answers no shouldDownload takes every pack, as Apple's default does).
extension="$work/extension.so"
cc -O2 -Wall -I "$root/SDK/C/include" -shared -fPIC -o "$extension" "$root/Plugins/C/example_extension.c"
make_app() {  # FOLDER IDENTIFIER SHARES(true|false)
    mkdir -p "$1"
    cp "$extension" "$1/"
    local share=""
    [ "$3" = true ] && share="<key>BAHostSharesWithPeers</key><true/>"
    local allowance=$((size * 4 + (100 << 20)))
    cat > "$1/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
  <key>CFBundleIdentifier</key><string>$2</string>
  <key>BAAppGroupID</key><string>group.$2</string>
  <key>BAHasManagedAssetPacks</key><true/>
  $share
  <key>BAManifestURL</key><string>https://cdn.lan.test/download-manifest.json</string>
  <key>BAInitialDownloadRestrictions</key><dict>
    <key>BADownloadAllowance</key><integer>$allowance</integer>
    <key>BAEssentialDownloadAllowance</key><integer>$allowance</integer>
    <key>BADownloadDomainAllowList</key><array><string>cdn.lan.test</string></array>
  </dict>
  <key>BAMaxInstallSize</key><integer>$allowance</integer>
</dict></plist>
PLIST
}
make_app "$work/shared-app" com.example.shared true
make_app "$work/private-app" com.example.private false

# --- Machines: a daemon in a machine's namespace, with a home of its own.
start_daemon() {  # MACHINE NAME [BUS]: the daemon NAME (its home $work/NAME) in MACHINE's namespace
    local machine=$1 name=$2 bus=${3:-}
    local home="$work/$name"
    mkdir -p "$home/run" "$home/config" "$home/apps"
    [ -n "$bus" ] || bus="unix:path=$home/no-bus"
    env HOME="$home" XDG_RUNTIME_DIR="$home/run" XDG_CONFIG_HOME="$home/config" SSL_CERT_FILE="$work/ca.pem" \
        DBUS_SYSTEM_BUS_ADDRESS="$bus" DBUS_SESSION_BUS_ADDRESS="unix:path=$home/no-bus" \
        ip netns exec "peer-$machine" "$bahost" daemon --socket "$home/service.sock" --data-root "$home/data" \
        --ca-file "$work/ca.pem" --apps-folder "$home/apps" --peer-listen "0.0.0.0:6881,0.0.0.0:6882s" \
        --peer-stall-seconds 10 --retry-delay 0.2 >> "$home/daemon.log" 2>&1 &
    daemons[$name]=$!
    for _ in $(seq 200); do [ -S "$home/service.sock" ] && return 0; sleep 0.05; done
    fail "the daemon $name did not start"
}
stop_daemon() {  # NAME
    kill -TERM "${daemons[$1]}" 2>/dev/null || true
    wait "${daemons[$1]}" 2>/dev/null || true
    unset "daemons[$1]"
    rm -f "$work/$1/service.sock"
}
on() {  # NAME BAHOST-ARGUMENTS…: a command to daemon NAME, with its settings folder
    local name=$1; shift
    XDG_CONFIG_HOME="$work/$name/config" "$bahost" "$@" --socket "$work/$name/service.sock"
}
install() {  # NAME APP: installs, keeping the events (JSON lines) in $work/NAME-APP.events; prints the seconds taken
    local name=$1 app=$2 start
    start=$(date +%s%N)
    on "$name" install "$work/$app" --json > "$work/$name-$app.events" \
        || fail "bahost install $app on $name: $(tail -3 "$work/$name-$app.events")"
    local ms=$((($(date +%s%N) - start) / 1000000))
    printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}
peers() {  # NAME APP KEY: a field of the install's peers event (empty without one)
    /usr/bin/python3 - "$work/$1-$2.events" "$3" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    event = json.loads(line)
    if event.get("event") == "peers":
        print(event.get(sys.argv[2], ""))
        break
PY
}
installed_whole() {  # NAME APP: the installed file is byte-identical to the CDN's
    local packs="$work/$1/data/containers/group.com.example.$2/Library/Application Support/BackgroundAssets/AssetPacks"
    cmp -s "$work/pack/world/blob.bin" "$packs/world/world/blob.bin"
}
log_mark() { wc -l < "$work/nginx/logs/access.log"; }
cdn_bytes() {  # ADDRESS MARK: what nginx sent ADDRESS of the archive since MARK
    tail -n +"$(($2 + 1))" "$work/nginx/logs/access.log" | awk -v who="$1" \
        '$1 == who && $0 ~ /packs\/world/ { sum += $3 } END { print sum + 0 }'
}

# --- 1. A: the first machine, from the CDN through the swarm.
start_daemon a a
on a settings set peers.share any > /dev/null
mark=$(log_mark)
seconds_a=$(install a shared-app)
installed_whole a shared || fail "A's installed file differs from the CDN's"
[ "$(peers a shared-app fellBack)" = "" ] || fail "A's swarm fell back: $(peers a shared-app fellBack)"
echo "1. A installed from the CDN in ${seconds_a}s (nginx sent A $(cdn_bytes 10.77.0.1 "$mark") of $archive bytes)"
figure peers.first-seconds "$seconds_a"

# --- 2. B, after: most of it from A.
start_daemon b b
on b settings set peers.share any > /dev/null
mark=$(log_mark)
seconds_b=$(install b shared-app)
installed_whole b shared || fail "B's installed file differs from the CDN's"
from_cdn=$(cdn_bytes 10.77.0.2 "$mark")
from_peers=$(peers b shared-app fromPeers)
echo "2. B installed in ${seconds_b}s: $from_peers bytes from peers, nginx sent B $from_cdn of $archive"
[ "$from_cdn" -lt $((archive / 2)) ] || fail "B took $from_cdn of $archive bytes from the CDN, not mostly from A"
[ "${from_peers:-0}" -gt $((archive / 2)) ] || fail "B took ${from_peers:-0} bytes from peers"
figure peers.second-seconds "$seconds_b"
figure peers.second-cdn-bytes "$from_cdn"
figure peers.archive-bytes "$archive"

# The benchmark's figure: A serves a new machine (on D's address) under peers.upload 2M while A's user downloads
# (a curl from the CDN). A's upload is read from its link's counter (the namespace's own sysfs) each second, for
# 30 s at most: the figure is the busiest second.
if [ -n "$record" ]; then
    on a settings set peers.upload 2M > /dev/null
    # On D's address: A, a seed, takes B's address for another seed's and would not connect to it again.
    start_daemon d b-upload
    on b-upload settings set peers.share any > /dev/null
    ip netns exec peer-a curl -s -o /dev/null --cacert "$work/ca.pem" https://cdn.lan.test/packs/world &
    user=$!
    sent() { ip netns exec peer-a cat /sys/class/net/eth0/statistics/tx_bytes; }
    on b-upload install "$work/shared-app" --json > "$work/b-upload.events" &
    installer=$!
    busiest=0
    before=$(sent)
    for _ in $(seq 30); do
        sleep 1
        now=$(sent)
        [ $((now - before)) -gt "$busiest" ] && busiest=$((now - before))
        before=$now
        kill -0 "$installer" 2>/dev/null || break
    done
    [ "$busiest" -gt 0 ] || fail "A sent nothing while it served"
    figure peers.upload-rate "$busiest"
    echo "   A sent at most $busiest bytes in a second to peers under peers.upload 2M while its user downloaded"
    kill "$user" 2>/dev/null || true
    stop_daemon b-upload
    wait "$installer" 2>/dev/null || true
    on a settings set peers.upload off > /dev/null
fi

# --- 3. An app that did not allow sharing: all from the CDN, no swarm.
if [ -z "$record" ]; then
mark=$(log_mark)
install b private-app > /dev/null
installed_whole b private || fail "B's private app's file differs from the CDN's"
[ -z "$(peers b private-app fromPeers)" ] || fail "the private app's archive went through the swarm"
[ "$(cdn_bytes 10.77.0.2 "$mark")" -ge "$archive" ] || fail "the private app's archive did not come from the CDN whole"
echo "3. the app that does not share: its whole archive from the CDN, none from a peer"
fi
stop_daemon b

# --- 4. A liar among the peers: A stops, C lies, a new machine B2 downloads.
stop_daemon a
ip netns exec peer-c /usr/bin/python3 "$here/lying-peer.py" "$work/www/download-manifest.json" world 6881 \
    "$work/liar.log" &
daemons[liar]=$!
start_daemon b b2
on b2 settings set peers.share any > /dev/null
install b2 shared-app > /dev/null
if ! installed_whole b2 shared; then
    figure peers.corrupt-files 1
    fail "B2's installed file differs from the CDN's, with a liar among the peers"
fi
figure peers.corrupt-files 0
grep -q "lied" "$work/liar.log" || fail "the liar was never asked for a piece: $(tail -3 "$work/liar.log")"
banned=$(peers b2 shared-app banned)
failed=$(peers b2 shared-app failedPieces)
[ "${banned:-0}" -ge 1 ] || fail "the liar was not banned (failed pieces: $failed)"
echo "4. the liar sent $(grep -c lied "$work/liar.log") blocks of lies: $failed pieces failed," \
    "$banned peer banned, file whole"
kill -9 "${daemons[liar]}"; unset "daemons[liar]"
stop_daemon b2
if [ -n "$record" ]; then echo "PASS: lan.sh (the benchmark's figures)"; exit 0; fi

# --- 5. A killed while B3 downloads from it (A sends 1 MiB/s): B3 finishes from the web seed.
start_daemon a a
on a settings set peers.upload 1M > /dev/null
sleep 1
start_daemon b b3
on b3 settings set peers.share any > /dev/null
on b3 install "$work/shared-app" --json > "$work/b3-shared-app.events" &
installer=$!
for _ in $(seq 300); do
    got=$(on b3 debug downloads --app com.example.shared --json 2>/dev/null \
        | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["downloads"]
print(r[0].get("peers", {}).get("fromPeers", 0) if r else 0)' \
        2>/dev/null || echo 0)
    [ "$got" -ge $((2 << 20)) ] && break
    sleep 0.1
done
[ "$got" -ge $((2 << 20)) ] || fail "B3 never took 2 MiB from A ($got)"
kill -9 "${daemons[a]}"; unset "daemons[a]"; rm -f "$work/a/service.sock"
wait "$installer" || fail "B3's install failed after A was killed: $(tail -3 "$work/b3-shared-app.events")"
installed_whole b3 shared || fail "B3's installed file differs from the CDN's"
echo "5. A killed after B3 took $got bytes from it: B3 finished, $(peers b3 shared-app fromPeers) from peers," \
    "$(peers b3 shared-app fromWebSeed) from the CDN"
stop_daemon b3

# --- 6. A on battery serves nobody.
mkdir -p "$work/a-bus"
bus="unix:path=$work/a-bus/socket"
dbus-daemon --session --nofork --address="$bus" > "$work/a-bus/dbus.log" 2>&1 &
daemons[bus]=$!
for _ in $(seq 100); do [ -S "$work/a-bus/socket" ] && break; sleep 0.05; done
DBUS_SYSTEM_BUS_ADDRESS="$bus" /usr/bin/python3 -m dbusmock --system --template upower > "$work/a-bus/upower.log" 2>&1 &
daemons[upower]=$!
for _ in $(seq 100); do
    gdbus call --address "$bus" --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
        --method org.freedesktop.DBus.NameHasOwner org.freedesktop.UPower 2>/dev/null | grep -q true && break
    sleep 0.1
done
gdbus call --address "$bus" --dest org.freedesktop.UPower --object-path /org/freedesktop/UPower/devices/DisplayDevice \
    --method org.freedesktop.DBus.Mock.SetDeviceProperties /org/freedesktop/UPower/devices/DisplayDevice \
    "{'Type': <uint32 2>, 'IsPresent': <true>, 'Percentage': <80.0>}" > /dev/null
gdbus call --address "$bus" --dest org.freedesktop.UPower --object-path /org/freedesktop/UPower \
    --method org.freedesktop.DBus.Properties.Set org.freedesktop.UPower OnBattery "<true>" > /dev/null
start_daemon a a "$bus"
on a settings set peers.upload off > /dev/null
grep -q "serving nobody: on battery" "$work/a/daemon.log" \
    || { sleep 1; grep -q "serving nobody: on battery" "$work/a/daemon.log"; } || fail "A did not see its battery"
start_daemon b b4
on b4 settings set peers.share any > /dev/null
install b4 shared-app > /dev/null
installed_whole b4 shared || fail "B4's installed file differs from the CDN's"
[ "$(peers b4 shared-app fromPeers)" = 0 ] || fail "A on battery served $(peers b4 shared-app fromPeers) bytes"
echo "6. A on battery: B4 took nothing from it, $(peers b4 shared-app fromWebSeed) bytes from the CDN"
stop_daemon b4
stop_daemon a

# --- 7. My own machines: A2 and B5 paired; D of another household.
start_daemon a a2
start_daemon b b5
start_daemon d d
code=$(XDG_CONFIG_HOME="$work/a2/config" "$bahost" peers pair --json \
    | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["code"])')
XDG_CONFIG_HOME="$work/b5/config" "$bahost" peers pair "$code" > /dev/null
XDG_CONFIG_HOME="$work/d/config" "$bahost" peers pair > /dev/null
for name in a2 b5 d; do
    for _ in $(seq 100); do grep -q "peers: share with own" "$work/$name/daemon.log" && break; sleep 0.05; done
done
sleep 1
install a2 shared-app > /dev/null
installed_whole a2 shared || fail "A2's installed file differs from the CDN's"
mark=$(log_mark)
install b5 shared-app > /dev/null
installed_whole b5 shared || fail "B5's installed file differs from the CDN's"
[ "$(peers b5 shared-app fromPeers)" -gt $((archive / 2)) ] \
    || fail "B5, paired with A2, took $(peers b5 shared-app fromPeers) bytes from peers"
install d shared-app > /dev/null
installed_whole d shared || fail "D's installed file differs from the CDN's"
[ "$(peers d shared-app fromPeers)" = 0 ] || fail "D, of another household, took $(peers d shared-app fromPeers) bytes"
echo "7. own machines: B5 took $(peers b5 shared-app fromPeers) bytes from A2; D, of another household, none"
echo "PASS: lan.sh"
