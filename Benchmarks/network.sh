#!/usr/bin/env bash
# Background downloads beside the user's own traffic (issue 59's figures), on a network built as a home's: this
# machine's client namespace, a router namespace whose queue toward the client is a 40 Mbit/s token bucket with room
# for 300 ms (as a home router's), and a server namespace whose TCP is loss-based (reno, as most servers'; this
# machine's BBR keeps queues short and would show nothing a user feels). nginx serves https in the server namespace.
#
#   Benchmarks/network.sh [--runs N] [--seconds S] [--outage S[,S…]] [--only traffic|outage] [--record FILE]
#       (root: namespaces, veth, tc; BENCH_BIN=folder for another build; Benchmarks/run.sh calls it as "network",
#       recording "network.NAME VALUE" lines into its results; BENCH_VERBOSE=1 prints bahost's events)
#
# Prints one line per figure, "name value", and a summary:
#   foreground-alone, foreground-beside-bahost, foreground-beside-curl   the user's download, bytes a second
#   bahost-alone                                                          bahost's background download alone
#   ping-idle, ping-bahost, ping-bahost-full-speed                        mean ping across the router, ms
# with yielding on, and, for the "now" column, with `--no-background-yield`; then outages in the middle of a download
# with --max-attempts 2, of each --outage length (30 s, and 150 s in the full suite), in two topologies:
#   only-link      the client's only link down (its routes go with it), then up again
#   second-link    the server also on a second, direct link, which carries the download; beside it a default route
#                  through the router, which drops what it gets for that address (a VPN's or a LAN server's route
#                  beside Wi-Fi): with the second link down, connections leave by the default route, unanswered
# and records, for each:
#   resume.TOPOLOGY.SECONDS   from the link's return to the download's next bytes
#   outage-failures           downloads that failed
set -euo pipefail
cd "$(dirname "$0")/.."
runs=1 measure_seconds=10 record="" outage_seconds=30 only=""
while [ $# -gt 0 ]; do
    case $1 in
        --runs) runs=$2; shift 2 ;;
        --seconds) measure_seconds=$2; shift 2 ;;
        --record) record=$2; shift 2 ;;
        --outage) outage_seconds=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        *) echo "network.sh: unknown option $1" >&2; exit 64 ;;
    esac
done
[ "$(id -u)" -eq 0 ] || { echo "network.sh: needs root (network namespaces)" >&2; exit 77; }
need=()
for tool in curl ping ethtool; do command -v "$tool" >/dev/null || need+=("$tool"); done
if [ ${#need[@]} -gt 0 ]; then
    packages=("${need[@]/ping/iputils-ping}")
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi
bin=${BENCH_BIN:-.build/release}
bahost=$bin/bahost
[ -x "$bahost" ] || { echo "network.sh: no $bahost (scripts/build-release.sh bahost)" >&2; exit 1; }

id=$$
C=bahost-net-$id-c R=bahost-net-$id-r S=bahost-net-$id-s
work=$(mktemp -d /tmp/bahost-network.XXXXXX)
chmod 755 "$work"  # nginx's workers run as nobody
cleanup() {
    for ns in $C $R $S; do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

# The network.
for ns in $C $R $S; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip link add c0 netns "$C" type veth peer name r0 netns "$R"
ip link add r1 netns "$R" type veth peer name s0 netns "$S"
ip -n "$C" addr add 10.78.1.2/24 dev c0
ip -n "$R" addr add 10.78.1.1/24 dev r0
ip -n "$R" addr add 10.78.2.1/24 dev r1
ip -n "$S" addr add 10.78.2.2/24 dev s0
for link in "$C c0" "$R r0" "$R r1" "$S s0"; do set -- $link; ip -n "$1" link set "$2" up; done
ip -n "$C" route add default via 10.78.1.1
ip -n "$S" route add default via 10.78.2.1
# The second link, for the second-link outages: the server's second address, reached by it alone (the router drops
# what it gets for it, silently, as a path the server is not on).
ip link add c1 netns "$C" type veth peer name s1 netns "$S"
ip -n "$C" addr add 10.78.3.2/24 dev c1
ip -n "$S" addr add 10.78.3.1/24 dev s1
ip -n "$C" link set c1 up
ip -n "$S" link set s1 up
ip -n "$S" addr add 10.78.9.1/32 dev lo
ip -n "$C" route add 10.78.9.1/32 via 10.78.3.1 dev c1
ip -n "$R" route add blackhole 10.78.9.1/32
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
ip netns exec "$S" sysctl -qw net.ipv4.tcp_congestion_control=reno
# Segments as the wire carries them, so that the bucket meters packets, not 64 KiB aggregates.
for link in "$R r0" "$R r1" "$S s0" "$C c0"; do
    set -- $link
    ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1 || true
done
ip netns exec "$R" tc qdisc add dev r0 root tbf rate 40mbit burst 16kb latency 300ms

# The server: a certificate for its address, a large file.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.pem" -days 1 -subj /CN=bench-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$work/server.key" -out "$work/server.csr" -subj /CN=10.78.2.2 2>/dev/null
echo "subjectAltName=IP:10.78.2.2,IP:10.78.9.1" > "$work/ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -out "$work/server.pem" -days 1 -extfile "$work/ext" 2>/dev/null
mkdir -p "$work/www" "$work/logs" "$work/tmp"
truncate -s 4G "$work/www/big.bin"
cat > "$work/nginx.conf" <<NGINX
worker_processes 1;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server {
        listen 10.78.2.2:443 ssl;
        listen 10.78.9.1:443 ssl;
        ssl_certificate $work/server.pem;
        ssl_certificate_key $work/server.key;
        root $work/www;
    }
}
NGINX
ip netns exec "$S" /usr/sbin/nginx -c "$work/nginx.conf" -p "$work"
url=https://10.78.2.2/big.bin

# The app: one optional (background) download of the large file.
echo "big 4294967296 optional $url" > "$work/manifest.txt"
cat > "$work/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
<key>CFBundleIdentifier</key><string>com.example.levels</string>
<key>BAAppGroupID</key><string>group.com.example.levels</string>
<key>BAManifestURL</key><string>https://10.78.2.2/manifest.txt</string>
<key>BAInitialDownloadRestrictions</key><dict>
  <key>BADownloadAllowance</key><integer>8589934592</integer>
  <key>BAEssentialDownloadAllowance</key><integer>1</integer>
  <key>BADownloadDomainAllowList</key><array><string>10.78.2.2</string></array>
</dict>
<key>BAMaxInstallSize</key><integer>8589934592</integer>
</dict></plist>
PLIST
cp "$work/manifest.txt" "$work/www/manifest.txt"
# The same app, reached on the second link.
mkdir -p "$work/www/second"
echo "big 4294967296 optional https://10.78.9.1/big.bin" > "$work/www/second/manifest.txt"
sed -e 's|https://10.78.2.2/manifest.txt|https://10.78.9.1/second/manifest.txt|' \
    -e 's|<string>10.78.2.2</string>|<string>10.78.9.1</string>|' "$work/Info.plist" > "$work/Info-second.plist"
extension=$(cc -shared -fPIC -o "$work/ext.so" Plugins/C/example_extension.c -ISDK/C/include && echo "$work/ext.so")

foreground() {  # the user's download for $measure_seconds s; prints bytes a second
    ip netns exec "$C" curl -s --cacert "$work/ca.pem" -o /dev/null --max-time "$measure_seconds" \
        -w '%{speed_download}\n' "$url" || true
}
ping_ms() {  # mean of 30 pings across the router, ms
    ip netns exec "$C" ping -q -c 30 -i 0.2 10.78.2.2 | awk -F/ '/^rtt/ {print $5}'
}
start_bahost() {  # [OPTIONS]: bahost downloading the file in the background ($plist: the app's Info.plist)
    rm -rf "$work/data"
    ip netns exec "$C" "$bahost" run --plugin "$extension" --event periodic --info-plist "${plist:-$work/Info.plist}" \
        --data-root "$work/data" --ca-file "$work/ca.pem" --json "$@" > "$work/bahost.out" 2>&1 &
    bahost_pid=$!
    sleep 4  # the manifest, the window, the controller's ramp
}
stop_bahost() { kill "$bahost_pid" 2>/dev/null || true; wait "$bahost_pid" 2>/dev/null || true; }
bahost_rate() {  # bahost's bytes a second over $measure_seconds s, from its partial file's growth
    local before after
    before=$(du -b "$work"/data/transfers/* 2>/dev/null | awk '{s += $1} END {print s + 0}')
    sleep "$measure_seconds"
    after=$(du -b "$work"/data/transfers/* 2>/dev/null | awk '{s += $1} END {print s + 0}')
    echo $(( (after - before) / measure_seconds ))
}

partial_bytes() { du -b "$work"/data/transfers/* 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
outage() {  # TOPOLOGY SECONDS: the link down for SECONDS mid-download; prints "RESUME-SECONDS FAILURES"
    local topology=$1 seconds=$2 device=c0
    if [ "$topology" = second-link ]; then device=c1; plist=$work/Info-second.plist; else plist=""; fi
    start_bahost --max-attempts 2
    ip -n "$C" link set "$device" down
    sleep "$seconds"
    local before t0 resumed=""
    before=$(partial_bytes)
    ip -n "$C" link set "$device" up
    # As NetworkManager restores them.
    if [ "$topology" = second-link ]; then
        ip -n "$C" route replace 10.78.9.1/32 via 10.78.3.1 dev c1
    else
        ip -n "$C" route replace default via 10.78.1.1
    fi
    t0=$(date +%s%N)
    for _ in $(seq 1200); do
        if [ "$(partial_bytes)" -gt $((before + 65536)) ]; then resumed=$(date +%s%N); break; fi
        sleep 0.05
    done
    sleep 1
    stop_bahost
    [ -z "${BENCH_VERBOSE:-}" ] || grep -v WARNING "$work/bahost.out" | cut -c1-300 | tail -12 >&2
    plist=""
    local failures
    failures=$(grep -c '"event":"failed"' "$work/bahost.out" || true)
    [ -n "$resumed" ] && awk -v a="$t0" -v b="$resumed" -v f="$failures" 'BEGIN {printf "%.2f %d\n", (b - a) / 1e9, f}' \
        || echo "never $failures"  # recorded as 999 s, past any target
}

link=5000000  # 40 Mbit/s in bytes a second
for run in $(seq "$runs"); do
    if [ "$only" != traffic ]; then
        for topology in only-link second-link; do
            for seconds in ${outage_seconds//,/ }; do
                read -r resume failures < <(outage "$topology" "$seconds")
                echo "run $run: $topology outage of $seconds s: resumed $resume s after the link returned," \
                    "$failures download(s) failed"
                [ -z "$record" ] || printf 'network.resume.%s.%s %s\nnetwork.outage-failures %s\n' \
                    "$topology" "$seconds" "${resume/never/999}" "$failures" >> "$record"
            done
        done
    fi
    [ "$only" != outage ] || continue
    sleep 3  # the last run's queue drained
    idle=$(ping_ms)
    alone=$(foreground)
    curl_beside=$( (foreground > "$work/other" &) ; sleep 1; foreground; wait)
    start_bahost
    bahost_alone=$(bahost_rate)
    ping_bahost=$(ping_ms)
    beside=$(foreground)
    stop_bahost
    [ -z "${BENCH_VERBOSE:-}" ] || grep -v WARNING "$work/bahost.out" | cut -c1-400 | head -8 >&2
    start_bahost --no-background-yield
    full_alone=$(bahost_rate)
    ping_full=$(ping_ms)
    beside_full=$(foreground)
    stop_bahost
    if [ -n "$record" ]; then
        for pair in "ping-idle $idle" "ping-bahost $ping_bahost" "ping-bahost-full-speed $ping_full" \
            "foreground-alone $alone" "foreground-beside-bahost $beside" "foreground-beside-bahost-full-speed $beside_full" \
            "foreground-beside-curl $curl_beside" "bahost-alone $bahost_alone" "bahost-alone-full-speed $full_alone"; do
            echo "network.$pair" >> "$record"
        done
    fi
    echo "run $run: ping-idle $idle ping-bahost $ping_bahost ping-bahost-full-speed $ping_full"
    echo "run $run: foreground-alone $alone foreground-beside-bahost $beside foreground-beside-bahost-full-speed $beside_full foreground-beside-curl $curl_beside"
    echo "run $run: bahost-alone $bahost_alone bahost-alone-full-speed $full_alone link $link"
    awk -v a="$alone" -v b="$beside" -v f="$beside_full" -v c="$curl_beside" -v ba="$bahost_alone" -v fa="$full_alone" \
        -v l="$link" -v pi="$idle" -v pb="$ping_bahost" -v pf="$ping_full" 'BEGIN {
        printf "  foreground beside bahost: %.2fx (full speed: %.2fx, beside a second curl: %.2fx)\n", b / a, f / a, c / a
        printf "  bahost alone: %.2fx of the link (full speed: %.2fx)\n", ba / l, fa / l
        printf "  ping added by bahost: %+.0f ms (full speed: %+.0f ms)\n", pb - pi, pf - pi }'
done
