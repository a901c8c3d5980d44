#!/usr/bin/env bash
# Installs the Debian packages bahost needs beyond the Swift toolchain, only those missing.
#   libffi-dev       the extension runner's host function table (see README, "Where libffi is used")
#   libsqlite3-dev   the durable queue (GRDB on the system's SQLite)
#   libarchive-dev   asset pack archives: written by `bahost pack`, checked and extracted by the service (README,
#                    "Managed asset packs")
#   gcc              `cc`, which builds C extensions (and the tests' C extensions)
#   nginx, openssl   the local asset server of the demo and the tests, with a certificate authority they make
set -euo pipefail

packages=(libffi-dev libsqlite3-dev libarchive-dev gcc nginx openssl)
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
