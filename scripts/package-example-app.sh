#!/usr/bin/env bash
# Makes levels-app_VERSION_ARCH.deb: the example app packaged as a Linux app that adopts bahost is
# (docs/PACKAGING.md). Installing it is all it takes for the service to send its extension the install request,
# upgrading it the update request, removing it uninstalls it:
#   /usr/bin/levels-app                                   the app (linked with the Swift runtime statically)
#   /usr/share/bahost/apps/com.example.levels/Info.plist  its declaration: Apple's keys, and CFBundleVersion VERSION
#   /usr/share/bahost/apps/com.example.levels/levels.so   its extension (the C example: it needs nothing installed)
#   /usr/share/applications/com.example.levels.desktop    its menu entry, launched through `bahost launch`
#
# Usage: scripts/package-example-app.sh --version VERSION --manifest-url URL [--allow DOMAIN] [--output DIR]
#                                       [--skip-build]
#   --manifest-url  where the extension's manifest is served (IDENTIFIER SIZE essential|optional URL, a line each)
#   --allow         BADownloadDomainAllowList's one domain (default: the manifest URL's host)
#   --skip-build    package the levels-app the last release build made
set -euo pipefail
self=$(readlink -f "$0")
output=$(pwd)
cd "$(dirname "$0")/.."

version="" manifest_url="" allow="" skip=false
while [ $# -gt 0 ]; do
    case "$1" in
        --version) version=${2:?--version needs a version}; shift 2 ;;
        --manifest-url) manifest_url=${2:?--manifest-url needs a URL}; shift 2 ;;
        --allow) allow=${2:?--allow needs a domain}; shift 2 ;;
        --output) output=${2:?--output needs a folder}; shift 2 ;;
        --skip-build) skip=true; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "package-example-app.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
[ -n "$version" ] && [ -n "$manifest_url" ] || { echo "package-example-app.sh: --version and --manifest-url are needed (see --help)" >&2; exit 64; }
[[ "$version" =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || { echo "package-example-app.sh: '$version' is not a Debian version" >&2; exit 64; }
[ -n "$allow" ] || allow=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.urlsplit(sys.argv[1]).hostname or "")' "$manifest_url")
case "$output" in /*) ;; *) output="$OLDPWD/$output" ;; esac
mkdir -p "$output"

# Packaging needs dpkg-dev (dpkg-shlibdeps); linking levels-app with the Swift runtime statically needs libcurl's
# development files, which FoundationNetworking (URLRequest) links against.
missing=()
for package in dpkg-dev libcurl4-openssl-dev; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

if ! $skip; then
    scripts/build-release.sh levels-app >&2
fi
bin=$(swift build -c release --show-bin-path)
[ -x "$bin/levels-app" ] || { echo "package-example-app.sh: no release levels-app in $bin (drop --skip-build)" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/root"
declared="$root/usr/share/bahost/apps/com.example.levels"
mkdir -p "$root/usr/bin" "$declared" "$root/usr/share/applications"
install -m 755 -s "$bin/levels-app" "$root/usr/bin/levels-app"
cc -O2 -Wall -Werror -shared -fPIC -I SDK/C/include -o "$declared/levels.so" Plugins/C/example_extension.c
chmod 644 "$declared/levels.so"
cat > "$declared/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- The app's declaration: the folder's name is its CFBundleIdentifier; a new CFBundleVersion is an update. -->
<plist version="1.0">
<dict>
    <key>CFBundleIdentifier</key>
    <string>com.example.levels</string>
    <key>CFBundleVersion</key>
    <string>$version</string>
    <key>BAAppGroupID</key>
    <string>group.com.example.levels</string>
    <key>BAManifestURL</key>
    <string>$manifest_url</string>
    <key>BAInitialDownloadRestrictions</key>
    <dict>
        <key>BADownloadAllowance</key>
        <integer>104857600</integer>
        <key>BAEssentialDownloadAllowance</key>
        <integer>52428800</integer>
        <key>BADownloadDomainAllowList</key>
        <array>
            <string>$allow</string>
        </array>
    </dict>
    <key>BAMaxInstallSize</key>
    <integer>104857600</integer>
    <key>BAHostExtension</key>
    <string>levels.so</string>
</dict>
</plist>
PLIST
cat > "$root/usr/share/applications/com.example.levels.desktop" <<DESKTOP
[Desktop Entry]
Type=Application
Name=Levels
Comment=The bahost example app
# Through bahost launch: it waits for the essential downloads, then runs the app as com.example.levels.
Exec=bahost launch com.example.levels -- levels-app --list
Terminal=true
Categories=Game;
DESKTOP

mkdir -p "$stage/debian"
printf 'Source: levels-app\n\nPackage: levels-app\nArchitecture: any\n' > "$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O -e"$root/usr/bin/levels-app" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
arch=$(dpkg --print-architecture)
mkdir -p "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<CONTROL
Package: levels-app
Version: $version
Architecture: $arch
Maintainer: bahost developers <bahost@users.noreply.github.com>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: bahost${depends:+, $depends}
Section: games
Priority: optional
Description: the bahost example app, packaged as an app that adopts bahost
 Its package declares it in /usr/share/bahost/apps: the bahost service installs it, sends its extension the
 install and update content requests, and uninstalls it when the package is removed.
CONTROL
deb="$output/levels-app_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
