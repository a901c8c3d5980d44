#!/usr/bin/env bash
# Installs the Debian packages bahost needs beyond the Swift toolchain, only those missing.
#   libffi-dev  the extension runner's host function table (see README, "Where libffi is used")
#   gcc         `cc`, which builds C extensions (and the tests' C extensions)
set -euo pipefail

packages=(libffi-dev gcc)
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
