#!/usr/bin/env bash
# Installs the Debian packages bahost needs beyond the Swift toolchain, only those missing.
#   libffi-dev       the extension runner's host function table (see README, "Where libffi is used")
#   libsqlite3-dev   the durable queue (GRDB on the system's SQLite)
#   libarchive-dev   asset pack archives: written by `bahost pack`, checked and extracted by the service
#                    (docs/ASSET-PACKS.md)
#   libcurl4-openssl-dev
#                    the transfers: libcurl's multi interface on one transfer thread (docs/ARCHITECTURE.md)
#   gcc, make        `cc`, which builds C extensions (the tests' own, and scaffolded ones with their Makefile)
#   pkg-config       finds the installed C ABI for a C extension (`pkg-config --cflags bahost`)
#   nginx, openssl   the local asset server of the demo and the tests, with a certificate authority they make
#   python3          scripts/docs.sh (the C ABI page, the documentation check) and the README snippet test
#   python3-venv, python3-pytest, python3-setuptools
#                    the Python binding's tests: `pip install ./SDK/Python` into a virtual environment, then pytest
#   libproxy-dev     the desktop's proxy settings (GNOME's, KDE's, a PAC file) when no proxy variable is set
#   iproute2, ethtool, curl, tinyproxy, libproxy1-plugin-gsettings, libproxy1-plugin-webkit
#                    the network tests (Tests/NetworkTests): namespaces, links and routes, with offloads off so that
#                    a router's queue meters segments; the user's own download beside bahost's; a real proxy;
#                    GNOME's settings and a PAC file read through libproxy's plugins
#   libtorrent-rasterbar-dev
#                    BitTorrent v2 (C++): the pieces root `bahost pack download-manifest create` records for each
#                    archive, under which machines on one network share it (docs/PEERS.md)
#   libsystemd-dev   the system bus (sd-bus): NetworkManager's connectivity and metered state, logind's sleep
#   dbus-daemon, libglib2.0-bin, python3-dbusmock
#                    the system-bus tests (Tests/NetworkTests/SystemBusTests): a private bus, gdbus to drive it, and
#                    python-dbusmock's NetworkManager and logind standing in for the machine's
#   systemd          systemd-socket-activate, which stands in for systemd in the socket-activation test (nothing
#                    of it is started)
#   dunst, scrot, dbus-bin
#                    the desktop test (Tests/DaemonTests/DesktopProgressTests): a real notification server on a
#                    private session bus under Xvfb, a screenshot of it, dbus-monitor for what crossed the bus
#   love, xvfb, xauth
#                    the LÖVE game's test (Plugins/Love): the engine, headless under Xvfb
#   flatpak, debootstrap
#                    the shipping tests: Flatpak apps (Tests/Shipping/flatpak.sh: a runtime made from a minimal
#                    Debian) and the .deb in a clean Debian root (Tests/Shipping/deb.sh)
set -euo pipefail

packages=(libffi-dev libsqlite3-dev libarchive-dev libcurl4-openssl-dev gcc make pkg-config nginx openssl python3 python3-venv python3-pytest
    python3-setuptools libproxy-dev iproute2 ethtool curl tinyproxy libproxy1-plugin-gsettings libproxy1-plugin-webkit libtorrent-rasterbar-dev libsystemd-dev dbus-daemon libglib2.0-bin python3-dbusmock
    systemd dunst scrot dbus-bin love xvfb xauth flatpak debootstrap)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
