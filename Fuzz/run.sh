#!/usr/bin/env bash
# Fuzzes every parser that reads another party's bytes (Fuzz/Targets/FuzzTarget.swift) with libFuzzer and
# AddressSanitizer (swiftc -sanitize=fuzzer,address), one target after another, and prints one table: executions,
# their rate, the corpus the fuzzer grew, and findings. A finding (a crash, a hang over 10 s, memory over 2 GiB) is
# kept in .build-fuzz/findings/TARGET/ and the run fails; reproduce it with `bahost-fuzz TARGET FILE`, fix it, and
# copy the file to Fuzz/Findings/TARGET/, where the tests replay it for ever after.
#
# Usage: Fuzz/run.sh [--smoke] [--seconds N] [--build-only] [TARGET…]
#   --seconds N   how long each target runs (default 60)
#   --smoke       5 seconds each: scripts/test.sh runs it, so that the targets cannot rot
#   --build-only  build the fuzzer and stop (scripts/test.sh builds it in the background while the tests run)
# The fuzzer's own corpus grows in .build-fuzz/corpus/TARGET across runs; the seeds in Fuzz/Corpus/TARGET start it.
set -euo pipefail
self=$(readlink -f "$0")
cd "$(dirname "$0")/.."

seconds=60
build_only=false
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) seconds=5; shift ;;
        --seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
        --build-only) build_only=true; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "Fuzz/run.sh: unknown option '$1' (see --help)" >&2; exit 64 ;;
        *) targets+=("$1"); shift ;;
    esac
done

scratch=.build-fuzz
log=$(mktemp /tmp/bahost-fuzz-build.XXXXXX.log)
echo "== building bahost-fuzz with libFuzzer and AddressSanitizer (a first build takes minutes)"
if ! swift build --scratch-path "$scratch" --product bahost-fuzz -Xswiftc -sanitize=fuzzer,address \
    -Xswiftc -DFUZZING > "$log" 2>&1; then
    grep -m 20 -E "error:" "$log" >&2 || tail -20 "$log" >&2
    echo "Fuzz/run.sh: the build failed; its output is in $log" >&2
    exit 1
fi
rm -f "$log"
fuzzer="$(swift build --scratch-path "$scratch" --show-bin-path)/bahost-fuzz"
if $build_only; then
    echo "built $fuzzer"
    exit 0
fi

# The targets, as the program names them.
all=$( (env -u BAHOST_FUZZ_TARGET "$fuzzer" -runs=0 2>&1 || true) | sed -n 's/.*one of: //p' | tr -d ',')
[ -n "$all" ] || { echo "Fuzz/run.sh: $fuzzer did not list its targets" >&2; exit 1; }
[ ${#targets[@]} -gt 0 ] || read -ra targets <<< "$all"
for target in "${targets[@]}"; do
    [[ " $all " == *" $target "* ]] || { echo "Fuzz/run.sh: no target '$target'; there are: $all" >&2; exit 64; }
done

printf '| target | seconds | executions | per second | corpus | findings |\n|---|---|---|---|---|---|\n'
total=0
found=0
for target in "${targets[@]}"; do
    corpus="$scratch/corpus/$target"
    findings="$scratch/findings/$target"
    mkdir -p "$corpus" "$findings"
    output="$scratch/$target.log"
    # Leaks are not findings: the Swift runtime keeps its caches for the life of the process.
    BAHOST_FUZZ_TARGET=$target ASAN_OPTIONS=detect_leaks=0 SWIFT_BACKTRACE=enable=no "$fuzzer" -max_total_time="$seconds" -print_final_stats=1 \
        -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$findings/" "$corpus" "Fuzz/Corpus/$target" \
        > "$output" 2>&1 || true
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$output" | tail -1)
    executions=${executions:-0}
    count=$(find "$findings" -type f | wc -l)
    printf '| %s | %s | %s | %s | %s | %s |\n' "$target" "$seconds" "$executions" "$((executions / seconds))" \
        "$(find "$corpus" -type f | wc -l)" "$count"
    total=$((total + executions))
    found=$((found + count))
done
echo
echo "$total executions in all, $found findings"
if [ "$found" -gt 0 ]; then
    find "$scratch/findings" -type f | sed 's/^/  /'
    echo "reproduce one with: swift build --product bahost-fuzz && \$(swift build --show-bin-path)/bahost-fuzz TARGET FILE" >&2
    exit 1
fi
