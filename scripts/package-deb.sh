#!/usr/bin/env bash
# Makes bahost_VERSION_ARCH.deb with dpkg-deb: what scripts/install.sh installs, under /usr, with the systemd user
# unit in /usr/lib/systemd/user (systemd finds it: `systemctl --user enable --now bahost.service`).
#
# The Swift runtime is bundled, linked statically into bahost (--static-swift-stdlib), not declared: no Debian
# package ships the Swift runtime, so a declared dependency could not be met, and the package must install where
# there is no Swift toolchain. The runner is C. The dependencies dpkg-shlibdeps finds in the two binaries are
# declared (libffi8, libsqlite3-0, libarchive13, libstdc++6, libc6, ...). A Swift extension brings the runtime of
# the toolchain that built it; a C extension needs nothing.
#
# Usage: scripts/package-deb.sh [--output DIR] [--skip-build]   (default DIR: the current folder)
set -euo pipefail
self=$(readlink -f "$0")
output=$(pwd)
cd "$(dirname "$0")/.."

skip=()
while [ $# -gt 0 ]; do
    case "$1" in
        --output) output=${2:?--output needs a folder}; shift 2 ;;
        --skip-build) skip=(--skip-build); shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "package-deb.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
case "$output" in /*) ;; *) output="$OLDPWD/$output" ;; esac
mkdir -p "$output"
output=$(cd "$output" && pwd)

# dpkg-shlibdeps comes with dpkg-dev, which packaging needs and the rest of bahost does not.
if ! command -v dpkg-shlibdeps >/dev/null; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq dpkg-dev
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/root"
scripts/install.sh --prefix /usr --destdir "$root" "${skip[@]}" > "$stage/install.log" || {
    cat "$stage/install.log" >&2; exit 1; }

version=$("$root/usr/bin/bahost" --version)
arch=$(dpkg --print-architecture)

# Debian's layout: man pages and the changelog compressed, a copyright file.
gzip -9n "$root"/usr/share/man/man1/*.1
mv "$root/usr/share/doc/bahost/CHANGELOG.md" "$root/usr/share/doc/bahost/changelog"
gzip -9n "$root/usr/share/doc/bahost/changelog"
cat > "$root/usr/share/doc/bahost/copyright" <<'COPYRIGHT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: bahost
Comment: The binaries also contain the Swift runtime and Foundation (Apache-2.0 with Runtime Library Exception),
 SwiftNIO, swift-nio-ssl with BoringSSL (the `bahost serve` test server), swift-crypto, GRDB, swift-argument-parser,
 swift-log, swift-service-lifecycle and swift-system, linked statically under their own licences. Transfers use the
 system's libcurl (libcurl4), the desktop's proxy settings are read with its libproxy (libproxy1v5), and the system
 bus (NetworkManager, logind) with its libsystemd (libsystemd0).
COPYRIGHT

# dpkg-shlibdeps reads the package's name from a debian/control of its own.
mkdir -p "$stage/debian"
printf 'Source: bahost\n\nPackage: bahost\nArchitecture: any\n' > "$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O -e"$root/usr/bin/bahost" -e"$root/usr/libexec/bahost/bahost-extension-runner" \
    -e"$root/usr/lib/libbackgroundassets.so.1" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package-deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

mkdir -p "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<CONTROL
Package: bahost
Version: $version
Architecture: $arch
Maintainer: bahost developers <bahost@users.noreply.github.com>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Suggests: libproxy1-plugin-gsettings, libproxy1-plugin-kconfig, libproxy1-plugin-webkit
Section: utils
Priority: optional
Homepage: https://github.com/bahost/bahost
Description: Apple's Background Assets for Linux: a host for asset-downloader extensions
 bahost runs an app's asset-downloader extension (a shared object written against a stable C ABI, in Swift, C or
 any language) in a time-boxed, isolated process, performs the downloads it asks for (durable, resumable, within
 the app's allowances and domain allow list) and hands each finished file back. The per-user service
 (bahost daemon) does so for every installed app; bahost pack and bahost serve make and serve managed asset packs.
 .
 This package has the host, the extension runner, the C ABI's headers (pkg-config bahost), the apps' C library
 (libbackgroundassets, pkg-config backgroundassets), the systemd user units (the service, and its socket,
 enabled for every user: an app's first call starts the service), shell completions and man pages.
CONTROL
# The library in /usr/lib: dpkg runs ldconfig once the package is in.
echo "activate-noawait ldconfig" > "$root/DEBIAN/triggers"
# bahost.socket enabled for every user (`systemctl --global`, as debhelper's dh_installsystemduser does), so that an
# app's first call starts the service; disabled when the package is removed.
cat > "$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ] && command -v systemctl >/dev/null 2>&1; then
    systemctl --global enable bahost.socket >/dev/null 2>&1 || true
fi
POSTINST
cat > "$root/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
set -e
if [ "$1" = remove ] && command -v systemctl >/dev/null 2>&1; then
    systemctl --global disable bahost.socket >/dev/null 2>&1 || true
fi
PRERM
chmod 755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm"

deb="$output/bahost_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
echo "  Depends: $depends"
echo "  $(du -h "$deb" | cut -f1), installed $(du -sh --exclude=DEBIAN "$root" | cut -f1)"
