#!/usr/bin/env bash
# Whether libtorrent 2.0.8 holds an upload limit for a peer at a private address (docs/performance/DECISIONS.md #61):
# two network namespaces on one bridge, a 64 MiB v2 torrent seeded under 2 MiB/s by each mechanism in turn
# (upload-fit-machine.py), and how long the other machine takes. Measured: the session's limit alone 1.9 s (peers at
# private addresses are in libtorrent's local class, which it does not limit); each other mechanism 34-36 s.
# Needs root and python3-libtorrent; uses only the namespaces it makes (ufit-*), removed at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "upload-fit.sh: needs root (network namespaces)" >&2; exit 77; }
/usr/bin/python3 -c "import libtorrent" 2>/dev/null \
    || { echo "upload-fit.sh: needs libtorrent's Python binding: apt-get install python3-libtorrent" >&2; exit 77; }
work=$(mktemp -d /tmp/upload-fit.XXXXXX)
cleanup() {
    for ns in ufit-a ufit-b ufit-lan; do
        ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
}
trap 'cleanup; rm -rf "$work"' EXIT
cleanup
ip netns add ufit-lan
ip -n ufit-lan link add br0 type bridge
ip -n ufit-lan link set br0 up
n=1
for m in a b; do
    ip netns add "ufit-$m"
    ip link add "uf-$m" netns ufit-lan type veth peer name eth0 netns "ufit-$m"
    ip -n ufit-lan link set "uf-$m" master br0 up
    ip -n "ufit-$m" addr add "10.79.0.$n/24" dev eth0
    ip -n "ufit-$m" link set eth0 up
    ip -n "ufit-$m" link set lo up
    n=$((n + 1))
done
mkdir -p "$work/seed"
head -c $((64 << 20)) /dev/urandom > "$work/seed/pack.bin"
/usr/bin/python3 - "$work" <<'PY'
import sys, libtorrent as lt
work = sys.argv[1]
files = lt.file_storage(); lt.add_files(files, f"{work}/seed/pack.bin")
made = lt.create_torrent(files, 0, lt.create_torrent.v2_only); lt.set_piece_hashes(made, f"{work}/seed")
full = made.generate()
open(f"{work}/info.bencoded", "wb").write(lt.bencode(full[b"info"]))
open(f"{work}/layers.bencoded", "wb").write(lt.bencode(full[b"piece layers"]))
PY
for variant in session local torrent filter runtime; do
    rm -rf "$work/leech"
    ip netns exec ufit-a /usr/bin/python3 "$here/upload-fit-machine.py" seed "$work" "$variant" &
    seed=$!
    sleep 3
    timeout 70 ip netns exec ufit-b /usr/bin/python3 "$here/upload-fit-machine.py" leech "$work" "$variant"
    kill "$seed" 2>/dev/null || true
    wait "$seed" 2>/dev/null || true
done
