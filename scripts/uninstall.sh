#!/usr/bin/env bash
# Removes exactly what scripts/install.sh installed, from the record it left in PREFIX/share/bahost/installed-files:
# each file it installed, then each folder it created, deepest first, when nothing else is in it. A file it did not
# install is never touched, even in a folder it made.
#
# Usage: scripts/uninstall.sh [--prefix DIR] [--user]
#   --prefix DIR   where bahost was installed (default /usr/local; ~/.local with --user)
#   --user         the prefix is ~/.local
# Stop the service first if it runs: systemctl --user disable --now bahost.service
set -euo pipefail

prefix=""
user=false
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix=${2:?--prefix needs a folder}; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        --user) user=true; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "uninstall.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
if [ -z "$prefix" ]; then
    if $user; then prefix="$HOME/.local"; else prefix=/usr/local; fi
fi
case "$prefix" in /*) ;; *) prefix="$(pwd)/$prefix" ;; esac
prefix=${prefix%/}

record="$prefix/share/bahost/installed-files"
[ -f "$record" ] || { echo "uninstall.sh: no install record at $record: was bahost installed with --prefix $prefix?" >&2; exit 1; }

absolute() { case "$1" in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
files=()
folders=()
while read -r kind path; do
    case "$kind" in
        file) files+=("$(absolute "$path")") ;;
        folder) folders+=("$(absolute "$path")") ;;
        '#'*|'') ;;
        *) echo "uninstall.sh: $record has an unknown line: $kind" >&2; exit 1 ;;
    esac
done < "$record"

removed=0
for file in "${files[@]}"; do
    if [ -e "$file" ] || [ -L "$file" ]; then rm -f "$file"; removed=$((removed + 1)); fi
done
# Deepest first: the record lists parents before their children.
for ((i = ${#folders[@]} - 1; i >= 0; i--)); do
    rmdir "${folders[$i]}" 2>/dev/null || true
done
echo "removed bahost from $prefix: $removed files"
for ((i = ${#folders[@]} - 1; i >= 0; i--)); do
    [ -d "${folders[$i]}" ] && echo "kept ${folders[$i]}: it holds files bahost did not install"
done
exit 0
