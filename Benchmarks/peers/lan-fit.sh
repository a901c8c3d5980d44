#!/usr/bin/env bash
# What libtorrent 2.0.8 does for machines on one network (docs/performance/DECISIONS.md #59): three network namespaces
# on one bridge. 1. A plain v2 torrent: the second machine finds the first by Local Service Discovery alone (no
# tracker, no DHT, no address given). 2. An SSL torrent, whose dictionary holds a household's certificate authority:
# a machine with a certificate it signed downloads; one with another authority's is refused in the handshake.
# Needs root, python3-libtorrent, openssl; uses only the namespaces it makes (lanfit-*), removed at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "lan-fit.sh: needs root (network namespaces)" >&2; exit 77; }
/usr/bin/python3 -c "import libtorrent" 2>/dev/null \
    || { echo "lan-fit.sh: needs libtorrent's Python binding: apt-get install python3-libtorrent" >&2; exit 77; }
work=$(mktemp -d /tmp/lan-fit.XXXXXX)
machines=(a b c)
cleanup() {
    for m in "${machines[@]}"; do
        ip netns pids "lanfit-$m" 2>/dev/null | xargs -r kill 2>/dev/null || true
        ip netns del "lanfit-$m" 2>/dev/null || true
    done
    ip netns del lanfit-lan 2>/dev/null || true
}
trap 'cleanup; rm -rf "$work"' EXIT
cleanup
ip netns add lanfit-lan
ip -n lanfit-lan link add br0 type bridge
ip -n lanfit-lan link set br0 type bridge mcast_snooping 0
ip -n lanfit-lan link set br0 up
n=1
for m in "${machines[@]}"; do
    ip netns add "lanfit-$m"
    ip link add "lf-$m" netns lanfit-lan type veth peer name eth0 netns "lanfit-$m"
    ip -n lanfit-lan link set "lf-$m" master br0 up
    ip -n "lanfit-$m" addr add "10.231.0.$n/24" dev eth0
    ip -n "lanfit-$m" link set eth0 up
    ip -n "lanfit-$m" link set lo up
    ip -n "lanfit-$m" route add 224.0.0.0/4 dev eth0
    n=$((n + 1))
done
# The content, its dictionary and layer.
mkdir -p "$work/www" "$work/a"
head -c $((20 << 20)) /dev/urandom > "$work/www/pack.bin"
cp "$work/www/pack.bin" "$work/a/"
/usr/bin/python3 - "$work" <<'PY'
import sys, libtorrent as lt
work = sys.argv[1]
fs = lt.file_storage(); lt.add_files(fs, f"{work}/www/pack.bin")
ct = lt.create_torrent(fs, 0, lt.create_torrent.v2_only); lt.set_piece_hashes(ct, f"{work}/www")
full = ct.generate()
open(f"{work}/plain.bencoded", "wb").write(lt.bencode(full[b"info"]))
open(f"{work}/layers.bencoded", "wb").write(lt.bencode(full[b"piece layers"]))
PY

echo "== 1. plain torrent: B finds A by Local Service Discovery alone"
cp "$work/plain.bencoded" "$work/info.bencoded"
ip netns exec lanfit-a "$here/lan-fit-machine.py" seed "$work" "$work/a" > "$work/1-a.log" 2>&1 &
sleep 1
FIT_TIMEOUT=20 ip netns exec lanfit-b "$here/lan-fit-machine.py" leech "$work" "$work/b1" 2>&1 | tail -4
kill %1 2>/dev/null || true; wait 2>/dev/null || true

echo "== 2. SSL torrent: the household's authority in the dictionary; A and B hold its certificates, C another's"
cd "$work"
openssl req -x509 -newkey rsa:2048 -nodes -keyout home.key -out home.pem -days 30 -subj "/CN=home" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 30 -subj "/CN=other" 2>/dev/null
for m in a b c; do
    ca=home; [ "$m" = c ] && ca=other
    openssl req -newkey rsa:2048 -nodes -keyout "$m.key" -out "$m.csr" -subj "/CN=$m" 2>/dev/null
    printf 'subjectAltName=DNS:*\n' > "$m.ext"
    openssl x509 -req -in "$m.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial -out "$m.pem" -days 30 \
        -extfile "$m.ext" 2>/dev/null
done
# RFC 7919's ffdhe2048 group: without Diffie-Hellman parameters each SSL torrent reports an asio.ssl error at start.
openssl genpkey -genparam -algorithm DH -pkeyopt group:ffdhe2048 -out dh.pem
export FIT_DH="$work/dh.pem"
/usr/bin/python3 - "$work" <<'PY'
import sys, libtorrent as lt
work = sys.argv[1]
info = lt.bdecode(open(f"{work}/plain.bencoded", "rb").read())
info[b"ssl-cert"] = open(f"{work}/home.pem", "rb").read()
open(f"{work}/info.bencoded", "wb").write(lt.bencode(info))
PY
ip netns exec lanfit-a "$here/lan-fit-machine.py" seed "$work" "$work/a" "$work/a.pem" "$work/a.key" > "$work/2-a.log" 2>&1 &
sleep 1
echo "-- B (the household's certificate)"
FIT_TIMEOUT=20 ip netns exec lanfit-b "$here/lan-fit-machine.py" leech "$work" "$work/b2" "$work/b.pem" "$work/b.key" 2>&1 | tail -4
echo "-- C (another authority's certificate)"
FIT_TIMEOUT=15 ip netns exec lanfit-c "$here/lan-fit-machine.py" leech "$work" "$work/c2" "$work/c.pem" "$work/c.key" 2>&1 | tail -4
kill %1 2>/dev/null || true; wait 2>/dev/null || true
echo "-- A's view"; tail -6 "$work/2-a.log"
