# Sourced by the shipping tests: make_clean_root DIR LOG makes a minimal Debian (debootstrap --variant=minbase) of
# the machine's own release, from the machine's own mirror, in DIR (about 30 s); its output goes to LOG. Uses the
# caller's $sudo and fail.
make_clean_root() {
    local root=$1 log=$2 mirror
    command -v debootstrap > /dev/null || {
        $sudo apt-get update -qq; DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq debootstrap; }
    mirror=$(sed -n 's/^URIs: *\([^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
    [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
    mirror=${mirror:-http://deb.debian.org/debian}
    (. /etc/os-release && $sudo debootstrap --variant=minbase "$VERSION_CODENAME" "$root" "$mirror") > "$log" 2>&1 || {
        tail -20 "$log" >&2; fail "debootstrap"; }
}
