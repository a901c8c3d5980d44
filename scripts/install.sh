#!/usr/bin/env bash
# Builds a release of bahost and installs it:
#   PREFIX/bin/bahost                                  the host, the service and every command
#   PREFIX/libexec/bahost/bahost-extension-runner      the process each extension window runs in
#   PREFIX/include/bahost/ba/*.h                       the C ABI (extensions) and the C API (apps: ba/app.h)
#   PREFIX/lib/libbackgroundassets.so.1                the apps' C library (and its .so link for the linker)
#   PREFIX/share/pkgconfig/bahost.pc                   `pkg-config --cflags bahost` (extensions: headers only)
#   PREFIX/share/pkgconfig/backgroundassets.pc         `pkg-config --cflags --libs backgroundassets` (apps)
#   the systemd user unit                              ~/.config/systemd/user with --user, else PREFIX/lib/systemd/user
#   PREFIX/share/{bash-completion,zsh,fish}/…          shell completions, from swift-argument-parser
#   PREFIX/share/man/man1/bahost*.1                    man pages, from swift-argument-parser's generate-manual
#   PREFIX/share/doc/bahost/                           README, docs/ and CHANGELOG
#   PREFIX/share/bahost/installed-files                what this installed, for scripts/uninstall.sh
#
# bahost links the Swift runtime statically (--static-swift-stdlib), so it runs on a machine without the Swift
# toolchain; so does libbackgroundassets (-static-stdlib: SwiftPM's flag covers executables only), which a C, Lua or
# Python app loads without knowing it is Swift inside: it exports ba/app.h's functions and nothing else. The runner is C: it loads libc, libffi and the extension, so a Swift extension brings the runtime of
# the toolchain that built it, and a C extension needs nothing more.
#
# Usage: scripts/install.sh [--prefix DIR] [--user] [--destdir DIR] [--skip-build]
#   --prefix DIR   where to install (default /usr/local; ~/.local with --user)
#   --user         install for this user only: prefix ~/.local, the unit in ~/.config/systemd/user
#   --destdir DIR  stage under DIR as if it were / (for packaging: scripts/package-deb.sh); no uninstall record
#   --skip-build   install what the last release build made
set -euo pipefail
self=$(readlink -f "$0")
start=$(pwd)
cd "$(dirname "$0")/.."

prefix=""
user=false
destdir=""
build=true
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix=${2:?--prefix needs a folder}; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        --user) user=true; shift ;;
        --destdir) destdir=$(cd "$start" && realpath -m "${2:?--destdir needs a folder}"); shift 2 ;;
        --skip-build) build=false; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
if [ -z "$prefix" ]; then
    if $user; then prefix="$HOME/.local"; else prefix=/usr/local; fi
fi
case "$prefix" in /*) ;; *) prefix="$start/$prefix" ;; esac
prefix=${prefix%/}

scripts/install-dependencies.sh
if $build; then scripts/build-release.sh bahost bahost-extension-runner generate-manual backgroundassets; fi
bin=$(swift build -c release --show-bin-path)
for tool in bahost bahost-extension-runner generate-manual libbackgroundassets.so; do
    [ -x "$bin/$tool" ] || { echo "install.sh: $bin/$tool is missing: build first (drop --skip-build)" >&2; exit 1; }
done
if readelf -d "$bin/libbackgroundassets.so" | grep -q "NEEDED.*libswiftCore"; then
    echo "install.sh: $bin/libbackgroundassets.so needs the Swift toolchain's runtime: build it as above" >&2
    exit 1
fi

root="$destdir$prefix"
record=()  # every file installed, relative to the prefix (or absolute, outside it)
created=() # every folder this run created, the same way, parents first
make_folder() {
    local relative=$1 path="" part
    IFS=/ read -ra parts <<< "$relative"
    for part in "${parts[@]}"; do
        path=${path:+$path/}$part
        if [ ! -d "$root/$path" ]; then
            mkdir -p "$root/$path"
            created+=("$path")
        fi
    done
}
# A prefix this run makes goes too when uninstalled.
if [ ! -d "$root" ]; then mkdir -p "$root"; created+=("$prefix"); fi
put() { # put MODE SOURCE RELATIVE-DESTINATION
    make_folder "$(dirname "$3")"
    install -m "$1" "$2" "$root/$3"
    record+=("$3")
}

echo "== installing into ${destdir:+$destdir (staged) }$prefix"
put 755 "$bin/bahost" bin/bahost
put 755 "$bin/bahost-extension-runner" libexec/bahost/bahost-extension-runner
# A release build keeps its debug information (more than half of bahost's 170 MB); installed copies go without it.
strip --strip-unneeded "$root/bin/bahost" "$root/libexec/bahost/bahost-extension-runner"
for header in SDK/C/include/ba/*.h; do put 644 "$header" "include/bahost/ba/$(basename "$header")"; done
put 644 "$bin/libbackgroundassets.so" lib/libbackgroundassets.so.1
strip --strip-unneeded "$root/lib/libbackgroundassets.so.1"
ln -sf libbackgroundassets.so.1 "$root/lib/libbackgroundassets.so"
record+=(lib/libbackgroundassets.so)

version=$("$bin/bahost" --version)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/bahost.pc" <<PC
prefix=$prefix
includedir=\${prefix}/include/bahost

Name: bahost
Description: Background Assets for Linux: the C ABI of bahost extensions (headers only)
Version: $version
Cflags: -I\${includedir}
PC
put 644 "$work/bahost.pc" share/pkgconfig/bahost.pc
# Outside /usr the loader does not look in PREFIX/lib until ldconfig is told: the app then finds the library by its
# run path.
rpath=""
[ "$prefix" = /usr ] || rpath=" -Wl,-rpath,\${libdir}"
cat > "$work/backgroundassets.pc" <<PC
prefix=$prefix
includedir=\${prefix}/include/bahost
libdir=\${prefix}/lib

Name: backgroundassets
Description: Background Assets for Linux: the C API of an app (ba/app.h), talking to the bahost service
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lbackgroundassets$rpath
PC
put 644 "$work/backgroundassets.pc" share/pkgconfig/backgroundassets.pc

sed "s#^ExecStart=.*#ExecStart=$prefix/bin/bahost daemon#" Support/systemd/bahost.service > "$work/bahost.service"
if $user && [ -z "$destdir" ]; then
    # The user's own unit folder lies outside the prefix: recorded by its absolute path.
    unit_folder="${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user"
    missing=()
    folder=$unit_folder
    while [ ! -d "$folder" ]; do missing=("$folder" "${missing[@]}"); folder=$(dirname "$folder"); done
    mkdir -p "$unit_folder"
    created+=("${missing[@]}")
    install -m 644 "$work/bahost.service" "$unit_folder/bahost.service"
    install -m 644 Support/systemd/bahost.socket "$unit_folder/bahost.socket"
    record+=("$unit_folder/bahost.service" "$unit_folder/bahost.socket")
    # Enabled as `systemctl --user enable bahost.socket` would (its link), which needs no running user manager.
    if [ ! -d "$unit_folder/sockets.target.wants" ]; then
        mkdir -p "$unit_folder/sockets.target.wants"
        created+=("$unit_folder/sockets.target.wants")
    fi
    ln -sfn "$unit_folder/bahost.socket" "$unit_folder/sockets.target.wants/bahost.socket"
    record+=("$unit_folder/sockets.target.wants/bahost.socket")
else
    put 644 "$work/bahost.service" lib/systemd/user/bahost.service
    put 644 Support/systemd/bahost.socket lib/systemd/user/bahost.socket
fi

"$bin/bahost" --generate-completion-script bash > "$work/bahost.bash"
"$bin/bahost" --generate-completion-script zsh > "$work/_bahost"
"$bin/bahost" --generate-completion-script fish > "$work/bahost.fish"
# Debian's zsh reads vendor-completions under /usr; site-functions elsewhere.
zsh_folder=share/zsh/site-functions
[ "$prefix" = /usr ] && zsh_folder=share/zsh/vendor-completions
put 644 "$work/bahost.bash" share/bash-completion/completions/bahost
put 644 "$work/_bahost" "$zsh_folder/_bahost"
put 644 "$work/bahost.fish" share/fish/vendor_completions.d/bahost.fish

# The tool behind swift-argument-parser's manual plugin, run directly: the plugin would first build every product of
# the package (the examples and benchmarks included) for nothing.
mkdir "$work/man"
"$bin/generate-manual" "$bin/bahost" --multi-page --output-directory "$work/man" \
    --date "$(git log -1 --format=%cs 2>/dev/null || date +%F)" --section 1 >/dev/null
for page in "$work"/man/*.1; do put 644 "$page" "share/man/man1/$(basename "$page")"; done

put 644 README.md share/doc/bahost/README.md
for page in docs/*.md; do put 644 "$page" "share/doc/bahost/docs/$(basename "$page")"; done
put 644 CHANGELOG.md share/doc/bahost/CHANGELOG.md

if [ -z "$destdir" ]; then
    make_folder share/bahost
    {
        echo "# bahost $version, installed by scripts/install.sh into $prefix"
        for file in "${record[@]}"; do echo "file $file"; done
        echo "file share/bahost/installed-files"
        for folder in "${created[@]}"; do echo "folder $folder"; done
    } > "$root/share/bahost/installed-files"
fi

echo "installed bahost $version into $prefix:"
printf '  %s\n' "${record[@]}"
case ":$PATH:" in *":$prefix/bin:"*) ;; *) echo "note: $prefix/bin is not on PATH" ;; esac
if ! pkg-config --variable=pc_path pkg-config 2>/dev/null | tr : '\n' | grep -qx "$prefix/share/pkgconfig"; then
    echo "note: for pkg-config, export PKG_CONFIG_PATH=$prefix/share/pkgconfig"
fi
if [ -z "$destdir" ]; then
    if $user; then
        echo "the service starts when an app needs it (bahost.socket, enabled); from login on: systemctl --user daemon-reload && systemctl --user enable --now bahost.service"
    else
        echo "the service: the user units are $prefix/lib/systemd/user/bahost.{service,socket} (link them into ~/.config/systemd/user unless systemd reads that folder; enable bahost.socket)"
    fi
    echo "remove it all with: scripts/uninstall.sh --prefix $prefix"
fi
