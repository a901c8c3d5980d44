#!/usr/bin/env bash
# Runs every test: installs what is missing, builds the package (the runner and the example extension land beside
# the test bundle), then runs the Swift tests, which start real extension processes, nginx and the host itself,
# then the shipping tests below.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's time, printed at the end (a failure included): CI must stay well inside its hour on two cores, and
# this says where the hour goes.
timings=()
# A stage that exits 77 could not run on this machine and said why: it is reported skipped, never passed, and under
# CI (where every stage must run) it fails the build.
skipped=()
stage() {
    local name=$1 start=$SECONDS status=0
    shift
    "$@" || status=$?
    if [ "$status" -eq 77 ]; then
        skipped+=("$name")
        timings+=("$(printf '%6d s  %s (SKIPPED)' $((SECONDS - start)) "$name")")
        [ -z "${CI:-}" ] || { echo "test.sh: '$name' was skipped, and CI must run it" >&2; exit 1; }
        return 0
    fi
    [ "$status" -eq 0 ] || exit "$status"
    timings+=("$(printf '%6d s  %s' $((SECONDS - start)) "$name")")
}
report_timings() {
    echo "== time by stage"
    [ ${#timings[@]} -eq 0 ] || printf '%s\n' "${timings[@]}"
    printf '%6d s  in all\n' "$SECONDS"
    [ ${#skipped[@]} -eq 0 ] || printf 'SKIPPED (not passed): %s\n' "${skipped[@]}"
}

# The fuzzer's sanitized build (its own scratch folder, .build-fuzz) runs in the background while the tests run,
# in the idle scheduling class: it gets only the CPU they leave unused (they wait on processes much of the time),
# and a runnable test preempts it at once. The fuzz stage below waits for it; a build that failed fails again
# there, with its errors. Its own session, so that a failure before then stops the whole build.
fuzz_build=
finish() {
    [ -z "$fuzz_build" ] || kill -- -"$fuzz_build" 2>/dev/null || true
    report_timings
}
trap finish EXIT

stage "dependencies" scripts/install-dependencies.sh
stage "build (debug, with the tests)" swift build --build-tests
setsid chrt --idle 0 Fuzz/run.sh --build-only > /dev/null 2>&1 &
fuzz_build=$!
# In parallel: each suite that waits on processes, sockets or servers runs its tests on threads of their own, a few
# at a time (`.ownThreads`, Tests/TestSupport/OwnThreads.swift), so their waits leave Swift's cooperative pool to
# the code under test. On two cores the Swift tests take about 130 s this way, against about 340 s one at a time.
stage "Swift tests" swift test --skip-build --parallel

# The Python binding (SDK/Python) installed with pip into a virtual environment, tested with pytest against the
# build's library and real daemons.
stage "Python binding (pytest)" Tests/Python/run.sh

# Machines of one household sharing packs over BitTorrent (docs/PEERS.md): network namespaces on one bridge, a CDN
# behind a shaped router, a lying peer, a killed one, one on battery, one of another household. Root.
stage "peers: machines on one network" Tests/Peers/lan.sh

# The benchmark suite in its smoke mode (small sizes, one run), so that it cannot rot; it asserts no timing.
stage "benchmarks (smoke)" Benchmarks/run.sh --smoke

# The fuzz targets, 5 seconds each, so that they cannot rot (the tests above replay their corpus).
fuzz_smoke() {
    wait "$fuzz_build" || true
    fuzz_build=
    Fuzz/run.sh --smoke
}
stage "fuzz (the rest of its build, smoke)" fuzz_smoke

# What a user gets, tested as a user gets it (Tests/Shipping): the SDK's documentation complete and building; code
# written against bahost refused where Apple's SDK would refuse it; every README snippet building as written; a
# release installed with scripts/install.sh, projects from `bahost new extension` built and run under it, and
# uninstalled; the .deb installed with apt into a clean Debian root (chroot: root or sudo); Flatpak apps with real
# Flatpak, a runtime made from a minimal Debian (root: debootstrap). The install test makes the release build
# that the .deb and Flatpak tests use.
stage "documentation" scripts/docs.sh --check
stage "shipping: Apple API" Tests/Shipping/apple-api.sh
stage "shipping: README snippets" Tests/Shipping/readme-snippets.sh
stage "shipping: install (release build) and scaffolds" Tests/Shipping/install-and-scaffold.sh
stage "shipping: the .deb in a clean root" env SKIP_BUILD=1 Tests/Shipping/deb.sh
stage "shipping: Flatpak apps" env SKIP_BUILD=1 Tests/Shipping/flatpak.sh
