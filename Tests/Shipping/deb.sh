#!/usr/bin/env bash
# The Debian package in a clean root: scripts/package-deb.sh makes the .deb; debootstrap makes a minimal Debian
# (no Swift toolchain, no compiler); `apt-get install ./bahost_….deb` inside it fetches the declared dependencies
# from the machine's mirror; then, in the chroot, `bahost --version`, `bahost check` and `bahost run` with a C
# extension built against the package's own headers; then an app's own package, installed, upgraded and removed with
# apt while the service runs as a user (Tests/Shipping/declared-app.sh); last, `apt-get remove` takes every file
# away again.
# Needs root (chroot, mount): run as root or with sudo. SKIP_BUILD=1 packages the release the last build made.
set -euo pipefail
cd "$(dirname "$0")/../.."

sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
work=$(mktemp -d /tmp/bahost-deb.XXXXXX)
root="$work/root"
. Tests/Shipping/declared-app.sh
. Tests/Shipping/clean-root.sh
cleanup() {
    declared_app_cleanup
    # Never delete through a mount: unmount, and keep the folder if that failed.
    if mountpoint -q "$root/proc" 2>/dev/null; then $sudo umount "$root/proc" || $sudo umount -l "$root/proc" || return; fi
    $sudo rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }
in_root() { $sudo chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

step "scripts/package-deb.sh"
scripts/package-deb.sh --output "$work" ${SKIP_BUILD:+--skip-build} > "$work/package.out" || fail "scripts/package-deb.sh"
deb=$(head -1 "$work/package.out")
[ -f "$deb" ] || fail "no package: $deb"
version=$(dpkg-deb --field "$deb" Version)
depends=$(dpkg-deb --field "$deb" Depends)
for library in libffi8 libsqlite3-0 libarchive13 libcurl4 libproxy1v5 libsystemd0 libtorrent-rasterbar2.0; do
    echo "$depends" | grep -q "$library" || fail "Depends lacks $library: $depends"
done
[ "$(basename "$deb")" = "bahost_${version}_$(dpkg --print-architecture).deb" ] || fail "the file's name: $(basename "$deb")"

step "a clean root: debootstrap --variant=minbase"
make_clean_root "$root" "$work/debootstrap.log"
$sudo cp /etc/resolv.conf "$root/etc/resolv.conf"
$sudo mount -t proc proc "$root/proc"
in_root sh -c 'command -v swift || command -v swiftc || command -v cc' && fail "the clean root has a toolchain"

step "apt-get install ./$(basename "$deb") in it"
$sudo cp "$deb" "$root/tmp/"
in_root apt-get update -qq > "$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get update in the root"; }
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "/tmp/$(basename "$deb")" >> "$work/apt.log" 2>&1 || {
    tail -20 "$work/apt.log" >&2; fail "apt-get install of the package"; }
[ "$(in_root bahost --version)" = "$version" ] || fail "bahost --version in the root"
in_root test -x /usr/libexec/bahost/bahost-extension-runner || fail "no runner"
in_root test -f /usr/lib/systemd/user/bahost.service || fail "no systemd user unit"
in_root test -f /usr/lib/systemd/user/bahost.socket || fail "no socket unit"
if in_root sh -c 'command -v systemctl' > /dev/null; then
    in_root test -L /etc/systemd/user/sockets.target.wants/bahost.socket || fail "bahost.socket is not enabled"
fi
in_root test -f /usr/share/man/man1/bahost.run.1.gz || fail "no man page"
grep -qx 'includedir=${prefix}/include/bahost' "$root/usr/share/pkgconfig/bahost.pc" || fail "bahost.pc"
grep -qx 'prefix=/usr' "$root/usr/share/pkgconfig/bahost.pc" || fail "bahost.pc's prefix"
grep -qx 'Libs: -L${libdir} -lbackgroundassets' "$root/usr/share/pkgconfig/backgroundassets.pc" || fail "backgroundassets.pc"

step "a C extension, built against the package's headers, in the root"
cc -shared -fPIC -Wall -Werror -I "$root/usr/include/bahost" -o "$work/levels.so" Plugins/C/example_extension.c
$sudo cp "$work/levels.so" Plugins/Examples/manifest.txt "$root/tmp/"
in_root bahost check --plugin /tmp/levels.so --event install --manifest /tmp/manifest.txt --within 5 > "$work/check.out" \
    || { cat "$work/check.out" >&2; fail "bahost check in the root"; }
grep -q "2 downloads: level-1, level-2" "$work/check.out" || fail "bahost check: $(cat "$work/check.out")"
in_root bahost run --plugin /tmp/levels.so --event install --manifest /tmp/manifest.txt --window-only --json > "$work/run.json" \
    || { cat "$work/run.json" >&2; fail "bahost run in the root"; }
grep -q '"kind":"returned"' "$work/run.json" || fail "bahost run: $(cat "$work/run.json")"
grep -q '"identifier":"level-2"' "$work/run.json" || fail "bahost run returned no level-2: $(cat "$work/run.json")"

step "an app in C, built against the package's header and library, in the root"
cc -Wall -Werror -I "$root/usr/include/bahost" -o "$work/levels-app-c" Plugins/C/apps/levels_app.c \
    -L "$root/usr/lib" -lbackgroundassets || fail "the C app did not build against the package"
$sudo cp "$work/levels-app-c" "$root/tmp/"
in_root env BAHOST_APP_IDENTIFIER=com.example.levels BAHOST_SOCKET=/tmp/none.sock /tmp/levels-app-c --json --list \
    > "$work/app.out" && fail "the C app connected to a service that is not there"
grep -q '"event":"connect".*BAErrorDomain 56' "$work/app.out" || fail "the C app in the root: $(cat "$work/app.out")"

test_declared_app

step "apt-get remove bahost"
in_root env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq bahost >> "$work/apt.log" 2>&1 || fail "apt-get remove"
for path in /usr/bin/bahost /usr/libexec/bahost /usr/include/bahost /usr/share/pkgconfig/bahost.pc \
    /usr/lib/libbackgroundassets.so.1 /usr/share/pkgconfig/backgroundassets.pc; do
    in_root test -e "$path" && fail "$path is still there after apt-get remove"
done
echo "PASS: bahost $version installs into a clean root with apt, runs a C extension there, and goes away again"
