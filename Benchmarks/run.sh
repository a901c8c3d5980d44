#!/usr/bin/env bash
# The benchmark suite: bahost against curl and aria2c on one nginx on loopback, and the runtime's own figures, in
# one run, printed as one table (min / median / max over repeated runs, and ratios).
#
#   Benchmarks/run.sh                  the full suite (release, built as installed; 1 GiB and 2 GiB files; minutes)
#   Benchmarks/run.sh --smoke          small sizes, one run each: checks that every figure still comes out (CI)
#   Benchmarks/run.sh [--smoke] FIGURE…  only these: big small rss activation terminate queue delegate scale packs size
#                                                   network (root: Benchmarks/network.sh, background beside the user's)
#                                                   person (Benchmarks/person.sh: a game, the charger, the schedule)
#                                                   peers (root: Tests/Peers/lan.sh --record, machines sharing a
#                                                   pack behind a 20 Mbit/s line; once, whatever BENCH_RUNS says)
#
# BENCH_WRAPPER runs `bahost run` and `bahost daemon` under a profiler, e.g.
#   BENCH_WRAPPER="perf record -g -o /tmp/perf.data" Benchmarks/run.sh small
# BENCH_BIN runs the programs of another build instead of building this tree's (a folder holding bahost,
# bahost-extension-runner, bahost-bench-app and libbackgroundassets.so): paired runs of a change against what came
# before it, from one checkout. BENCH_RUNS changes how many runs each figure takes (3; issue 27's target for
# the 1 GiB file counts 10: `BENCH_RUNS=10 Benchmarks/run.sh big`). BENCH_QUEUE_COUNT changes how many downloads
# the queue figure schedules (10,000); BENCH_SCALE_COUNT how many one content request returns in the scale figure
# (100,000).
#
# Figures: a large file's wall time to a verified file on disk; many small files per second and the CPU each costs,
# against curl, curl + fsync, the durable floor program (durable_floor.c) and the same floor on bahost's own libraries
# (Benchmarks/LibraryFloor: libcurl, GRDB); the host's peak RSS during a large
# download (and whether it grows with the file); extension activation against the floor of a bare spawn; the
# lateness of extensionWillTerminate and of the kill; the service's queue (against the floor of its calls,
# schedule_floor.c), delegate latency and scale; essential
# packs against curl + tar. Timings are never asserted: this prints them.
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=false
[ "${1:-}" = "--smoke" ] && { smoke=true; shift; }
figures=" ${*:-big small rss activation terminate queue delegate scale packs size network person peers} "
want() { [[ "$figures" == *" $1 "* ]]; }
if $smoke; then
    big=$((32 << 20)); huge=$((64 << 20)); small_count=100; runs=1; windows=20; configuration=debug
    queue_count=200; completions=10; scale_count=2000; pack_files=20
else
    big=$((1 << 30)); huge=$((2 << 30)); small_count=2000; runs=${BENCH_RUNS:-3}; windows=200
    configuration=release
    queue_count=${BENCH_QUEUE_COUNT:-10000}; completions=200; scale_count=${BENCH_SCALE_COUNT:-100000}
    pack_files=1000
fi
if ! [[ "$runs" =~ ^[1-9][0-9]{0,2}$ ]]; then
    echo "Benchmarks/run.sh: BENCH_RUNS must be a whole number from 1 to 999, not $(printf %q "$runs")" >&2
    exit 64
fi

scripts/install-dependencies.sh
need=()
# zstd: the packs figure unpacks the archive with `tar --zstd`. time: the small files' CPU per file. libcurl's
# headers: the durable floor program (Benchmarks/durable_floor.c).
for tool in curl aria2c python3 zstd /usr/bin/time; do command -v "$tool" >/dev/null || need+=("$tool"); done
dpkg-query -W -f='${Status}' libcurl4-openssl-dev 2>/dev/null | grep -q "install ok installed" \
    || need+=(libcurl4-openssl-dev)
if [ ${#need[@]} -gt 0 ]; then
    packages=("${need[@]/aria2c/aria2}")
    packages=("${packages[@]/\/usr\/bin\/time/time}")
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}"
fi
# The full suite measures the programs as they are installed (scripts/build-release.sh, as scripts/install.sh and
# the .deb build them): the Swift runtime linked statically, so that the two share one build. A program linked so
# starts sooner and calls the runtime directly (docs/performance/DECISIONS.md #18). The smoke pass keeps the debug build the tests
# use.
build() {
    if [ "$configuration" = release ]; then
        scripts/build-release.sh "$@" >/dev/null
    else
        for product in "$@"; do swift build --product "$product" >/dev/null; done
    fi
}
# A reference program like durable_floor.c, so built from this tree whatever BENCH_BIN says.
if want small; then
    build bahost-library-floor
    library_floor="$(swift build -c "$configuration" --show-bin-path)/bahost-library-floor"
fi
if [ -n "${BENCH_BIN:-}" ]; then
    if [ ! -x "$BENCH_BIN/bahost" ]; then
        echo "Benchmarks/run.sh: BENCH_BIN names a folder without bahost in it: $(printf %q "$BENCH_BIN")" >&2
        exit 64
    fi
    # Absolute: the C app's library is linked to it from the suite's own folder.
    bin=$(readlink -f "$BENCH_BIN")
else
    build bahost bahost-extension-runner bahost-bench-app backgroundassets
    bin=$(swift build -c "$configuration" --show-bin-path)
fi

work=$(mktemp -d /tmp/bahost-bench.XXXXXX)
chmod 755 "$work"
mkdir -p "$work/www/small" "$work/logs" "$work/tmp" "$work/out"
nginx_pid=""
trap '[ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null; [ -n "${daemon_pid:-}" ] && kill "$daemon_pid" 2>/dev/null; rm -rf "$work"' EXIT
cc -O2 -Wall -I SDK/C/include -shared -fPIC -o "$work/extension.so" Plugins/C/example_extension.c
cc -O2 -Wall -I SDK/C/include -shared -fPIC -o "$work/hang_in_entry.so" Plugins/C/misbehaving/hang_in_entry.c
cc -O2 -Wall -I SDK/C/include -shared -fPIC -o "$work/hang_in_will_terminate.so" Plugins/C/misbehaving/hang_in_will_terminate.c
cc -O2 -Wall -o "$work/spawn_floor" Benchmarks/spawn_floor.c
cc -O2 -Wall -o "$work/durable_floor" Benchmarks/durable_floor.c -lcurl -lsqlite3 -lpthread
cc -O2 -Wall -o "$work/schedule_floor" Benchmarks/schedule_floor.c -lsqlite3
# The queue figure's C app, linked with the app library under its installed name.
mkdir -p "$work/lib" && ln -s "$bin/libbackgroundassets.so" "$work/lib/libbackgroundassets.so.1"
cc -O2 -Wall -I SDK/C/include -o "$work/bench_app_c" Benchmarks/bench_app.c -L "$bin" -lbackgroundassets \
    -Wl,-rpath,"$work/lib"

port=""
for candidate in $(shuf -i 20000-60000 -n 50); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then port=$candidate; break; fi
done
cat > "$work/nginx.conf" <<NGINX
daemon off;
worker_processes 2;
pid $work/nginx.pid;
error_log $work/logs/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    keepalive_requests 100000;
    client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
    uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
    server {
        listen 127.0.0.1:$port; root $work/www;
        location /slow/ { alias $work/www/small/; limit_rate 1k; }
    }
}
NGINX
{ want big || want person; } && head -c "$big" /dev/urandom > "$work/www/big.bin"
want rss && head -c "$huge" /dev/urandom > "$work/www/huge.bin"
for i in $(seq 1 "$small_count"); do head -c 65536 /dev/urandom > "$work/www/small/$i.bin"; done
nginx -c "$work/nginx.conf" -p "$work" </dev/null >/dev/null 2>&1 &
nginx_pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
base="http://127.0.0.1:$port"

cat > "$work/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
  <key>CFBundleIdentifier</key><string>com.example.bench</string>
  <key>BAAppGroupID</key><string>group.com.example.levels</string>
  <key>BAManifestURL</key><string>$base/manifest</string>
  <key>BAInitialDownloadRestrictions</key><dict>
    <key>BADownloadAllowance</key><integer>100000000000</integer>
    <key>BAEssentialDownloadAllowance</key><integer>100000000000</integer>
    <key>BADownloadDomainAllowList</key><array><string>127.0.0.1</string></array>
  </dict>
  <key>BAMaxInstallSize</key><integer>100000000000</integer>
</dict></plist>
PLIST
echo "big $big optional $base/big.bin" > "$work/big.manifest"
echo "huge $huge optional $base/huge.bin" > "$work/huge.manifest"
for i in $(seq 1 "$small_count"); do echo "s$i 65536 optional $base/small/$i.bin"; done > "$work/small.manifest"
for i in $(seq 1 "$small_count"); do echo "url = $base/small/$i.bin"; echo "output = $work/out/$i.bin"; done > "$work/curl-small.cfg"
for i in $(seq 1 "$small_count"); do echo "$base/small/$i.bin"; done > "$work/aria2-small.txt"
cp "$work/aria2-small.txt" "$work/floor-small.txt"
echo "# nothing" > "$work/empty.manifest"
cp "$work/empty.manifest" "$work/www/manifest"
if want scale; then
    python3 -c "import sys
for i in range($scale_count): print(f'c{i} 65536 optional $base/slow/1.bin?c{i}')" > "$work/www/scale.manifest"
    sed "s|$base/manifest|$base/scale.manifest|" "$work/Info.plist" > "$work/scale.plist"
fi

results="$work/results.txt"
: > "$results"
now() { date +%s%N; }
since() { echo $(( ($(now) - $1) / 1000 )); }  # microseconds since a now()
record() { echo "$1 $2" >> "$results"; }
# Each tool starts in empty folders. What the previous one wrote is set aside, not deleted, until the figure is done:
# ext4 without a journal (this machine's disk) makes every file created within 30 s of a mass deletion scan past the
# deleted inodes, which would tax whichever tool runs next.
fresh() {
    mkdir -p "$work/trash"
    local aside; aside=$(mktemp -d "$work/trash/XXXXXX")
    for d in out data; do [ -e "$work/$d" ] && mv "$work/$d" "$aside/"; done
    mkdir -p "$work/out"; sync
}
empty_trash() { rm -rf "$work/trash"; }
# What bahost promises and curl does not: each file synced before it counts as done (`sync FILE…` fsyncs each),
# 16 at a time as bahost's 16 transfers do. curl and then this is the floor for a durable downloader.
durable() { (cd "$1" && find . -type f -print0 | xargs -0 -P 16 -n 125 sync); }
bahost_run() {  # MANIFEST [extra options]: the whole life cycle, as `bahost run` does it
    local manifest=$1; shift
    ${BENCH_WRAPPER:-} ${timed:-} "$bin/bahost" run --plugin "$work/extension.so" --event install \
        --info-plist "$work/Info.plist" --manifest "$manifest" --data-root "$work/data" --allow-insecure-loopback "$@" \
        >/dev/null
}
# A command run under $timer leaves its CPU time (user and system, its children's included) in cpu.txt;
# cpu_per_file gives it per small file, in ms.
timer="/usr/bin/time -f %U+%S+%M -o $work/cpu.txt"
cpu_per_file() { awk -F+ -v n="$small_count" '{printf "%.4f", ($1 + $2) * 1000 / n}' "$work/cpu.txt"; }
peak_kib() { awk -F+ '{print $3}' "$work/cpu.txt"; }  # the timed program's peak RSS

if want big; then
echo "== one large file ($((big >> 20)) MiB), $runs run(s) each"
for _ in $(seq "$runs"); do
    fresh; t=$(now); bahost_run "$work/big.manifest"; record big.bahost "$(since "$t")"
    fresh; t=$(now); curl -s -o "$work/out/big.bin" "$base/big.bin"; record big.curl "$(since "$t")"
    fresh; t=$(now); curl -s -o "$work/out/big.bin" "$base/big.bin"; sync "$work/out/big.bin"
    record big.curl-fsync "$(since "$t")"
    fresh; t=$(now); aria2c -q -x1 -s1 --file-allocation=none -d "$work/out" -o big.bin "$base/big.bin"
    record big.aria2-x1 "$(since "$t")"
    fresh; t=$(now); aria2c -q -x4 -s4 --file-allocation=none -d "$work/out" -o big.bin "$base/big.bin"
    record big.aria2-x4 "$(since "$t")"
    empty_trash
done
fi
if want small; then
echo "== $small_count files of 64 KiB, $runs run(s) each"
for _ in $(seq "$runs"); do
    fresh; t=$(now); timed=$timer bahost_run "$work/small.manifest" --max-concurrent 16 --max-per-host 16
    record small.bahost "$(since "$t")"; record small-cpu.bahost "$(cpu_per_file)"
    record small-rss.bahost "$(peak_kib)"
    fresh; t=$(now); curl -s --parallel --parallel-max 16 -K "$work/curl-small.cfg"; record small.curl "$(since "$t")"
    fresh; t=$(now); curl -s --parallel --parallel-max 16 -K "$work/curl-small.cfg"; durable "$work/out"
    record small.curl-fsync "$(since "$t")"
    fresh; t=$(now); $timer "$work/durable_floor" "$work/floor-small.txt" "$work/out" "$work/out/queue.db" 16
    record small.floor "$(since "$t")"; record small-cpu.floor "$(cpu_per_file)"
    fresh; t=$(now); $timer "$library_floor" "$work/floor-small.txt" "$work/out" "$work/out/queue.db" 16
    record small.library-floor "$(since "$t")"; record small-cpu.library-floor "$(cpu_per_file)"
    fresh; t=$(now); aria2c -q -j16 --file-allocation=none -d "$work/out" -i "$work/aria2-small.txt"
    record small.aria2-j16 "$(since "$t")"
done
empty_trash
fi
if want rss; then
echo "== peak resident memory during a $((huge >> 20)) MiB download"
peak() {  # COMMAND…: runs it, samples its VmRSS every 20 ms; records "peak-in-first-half peak-overall" in KiB
    local name=$1; shift
    "$@" >/dev/null & local pid=$! first=0 all=0 rss size
    while kill -0 "$pid" 2>/dev/null; do
        rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        [ -z "$rss" ] && rss=0
        [ "$rss" -gt "$all" ] && all=$rss
        size=$( (du -sb "$work/out" "$work/data" 2>/dev/null || true) | awk '{s += $1} END {printf "%d", s}')
        [ "$size" -lt $((huge / 2)) ] && [ "$rss" -gt "$first" ] && first=$rss
        sleep 0.02
    done
    wait "$pid"
    record "rss.$name" "$first $all"
}
fresh; peak bahost "$bin/bahost" run --plugin "$work/extension.so" --event install --info-plist "$work/Info.plist" \
    --manifest "$work/huge.manifest" --data-root "$work/data" --allow-insecure-loopback
fresh; peak curl curl -s -o "$work/out/huge.bin" "$base/huge.bin"
fresh; peak aria2-x4 aria2c -q -x4 -s4 --file-allocation=none -d "$work/out" -o huge.bin "$base/huge.bin"
empty_trash
fi
if want activation; then
echo "== extension activation, $windows windows; the floor: a bare spawn of /bin/true"
# Each report is parsed after its run: a parser starting beside the window would compete with it for the CPU.
for _ in $(seq "$windows"); do
    "$bin/bahost" run --plugin "$work/extension.so" --event periodic --manifest "$work/empty.manifest" --window-only \
        --json > "$work/window.json"
    python3 -c 'import json,sys; print("activation", json.load(sys.stdin)["activationSeconds"] * 1000)' \
        < "$work/window.json" >> "$results"
done
"$work/spawn_floor" "$windows" | sed 's/^/floor /' >> "$results"
fi
if want terminate; then
echo "== terminate precision, $windows windows each"
for _ in $(seq "$windows"); do
    "$bin/bahost" run --plugin "$work/hang_in_entry.so" --event periodic --manifest "$work/empty.manifest" --window-only \
        --json --budget 0.05 --grace 0.05 > "$work/window.json" || true
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("willTerminate", (r["willTerminateSentAtSeconds"] - 0.05) * 1000)' \
        < "$work/window.json" >> "$results"
    "$bin/bahost" run --plugin "$work/hang_in_will_terminate.so" --event periodic --manifest "$work/empty.manifest" \
        --window-only --json --budget 0.05 --grace 0.05 > "$work/window.json" || true
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("kill", (r["killSentAtSeconds"] - r["willTerminateSentAtSeconds"] - 0.05) * 1000)' \
        < "$work/window.json" >> "$results"
done
fi

# The service: a daemon with the benchmark app installed, and the app's side measured by bahost-bench-app.
daemon_pid=""
start_daemon() {  # [INFO_PLIST]: the app installed (the benchmark app, with an empty manifest, by default)
    rm -rf "$work/service"; mkdir -p "$work/service/app"
    cp "${1:-$work/Info.plist}" "$work/service/app/Info.plist"
    cp "$work/extension.so" "$work/service/app/"
    ${BENCH_WRAPPER:-} "$bin/bahost" daemon --socket "$work/service/sock" --data-root "$work/service/data" --allow-insecure-loopback \
        --scheduler-interval 3600 >"$work/service/daemon.log" 2>&1 &
    daemon_pid=$!
    for _ in $(seq 200); do [ -S "$work/service/sock" ] && break; sleep 0.05; done
    local t; t=$(now)
    "$bin/bahost" install "$work/service/app" --socket "$work/service/sock" >/dev/null
    install_microseconds=$(since "$t")
}
daemon_status() {  # KEY: a number from the daemon's /proc status, in KiB (VmRSS, VmHWM)
    awk -v key="$1:" '$1 == key {print $2}' "/proc/$daemon_pid/status"
}
engine_turn() {  # the mean of the daemon's engine turns so far, in ms
    "$bin/bahost" debug status --json --socket "$work/service/sock" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["engine"]["meanTurnMilliseconds"])'
}
stop_daemon() { kill "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=""; }
bench_app() {  # the app, launched as `bahost launch` does; keeps only its measurement lines
    "$bin/bahost" launch com.example.bench --socket "$work/service/sock" -- "$bin/bahost-bench-app" "$@" \
        | grep -E "^(schedule|fetch|delegate) "
}
bench_other_app() {  # LANGUAGE COUNT URL FETCHES: the queue figure's app in C or Python
    local language=$1; shift
    if [ "$language" = c ]; then
        "$bin/bahost" launch com.example.bench --socket "$work/service/sock" -- "$work/bench_app_c" "$@"
    else
        BACKGROUNDASSETS_LIBRARY="$bin/libbackgroundassets.so" PYTHONPATH=SDK/Python \
            "$bin/bahost" launch com.example.bench --socket "$work/service/sock" -- /usr/bin/python3 Benchmarks/bench_app.py "$@"
    fi | grep -E "^(c|python)\.(schedule|fetch) "
}

if want queue; then
echo "== queue scale: $queue_count scheduleDownload calls, then fetchCurrentDownloads on that queue"
for _ in $(seq "$runs"); do
    # Their URLs trickle at 1 KiB/s, so that the few transfers the daemon starts meanwhile stay out of the way.
    start_daemon
    bench_app queue --count "$queue_count" --url "$base/slow/1.bin" >> "$results"
    record turn "$(engine_turn)"
    stop_daemon
    # The floor of the same calls (schedule_floor.c), on the daemon's schema, on the same disk.
    "$work/schedule_floor" "$work/service/data/queue.sqlite" "$work/floor-schedule.sqlite" "$queue_count" \
        "$base/slow/1.bin" >> "$results"
    rm -f "$work"/floor-schedule.sqlite*
    # The same calls through the app's C API, and through Python over it, each on a daemon of its own.
    for language in c python; do
        start_daemon
        bench_other_app "$language" "$queue_count" "$base/slow/1.bin" 20 >> "$results"
        stop_daemon
    done
done
fi

if want size; then
echo "== sizes, stripped as scripts/install.sh installs them: the app library every game carries, and bahost"
for program in libbackgroundassets.so bahost; do
    strip --strip-unneeded -o "$work/stripped" "$bin/$program"
    echo "size.${program%%.*} $(stat -c %s "$work/stripped")" >> "$results"
done
rm -f "$work/stripped"
fi

if want delegate; then
echo "== completion → app delegate latency, $completions downloads one after another"
start_daemon
bench_app delegate-latency --count "$completions" --url "$base/small/1.bin" --size 65536 >> "$results"
stop_daemon
fi

if want scale; then
echo "== scale: one content request returning $scale_count downloads, then the queue at that size"
for _ in $(seq "$runs"); do
    # The window alone (`bahost run --window-only`): every path that handles the returned set must be linear.
    t=$(now)
    "$bin/bahost" run --plugin "$work/extension.so" --event install --manifest "$work/www/scale.manifest" \
        --window-only --allow-insecure-loopback --json --budget 300 > "$work/window.json"
    record scale.window "$(since "$t")"
    # Validated, queued and durable when `bahost install` returns (the install waits for the content request).
    start_daemon "$work/scale.plist"
    record scale.admit "$install_microseconds $(daemon_status VmHWM)"
    # The same calls as the queue figure, on a queue $scale_count long: a call should cost what it costs on a short one.
    bench_app queue --count 1000 --url "$base/slow/1.bin" --fetches 5 | sed 's/^/scale./' >> "$results"
    record scale.turn "$(engine_turn)"
    # The daemon at rest with that queue: the heap it freed after the last large reply is given back just after the
    # reply is sent, which can race the reading of its RSS.
    sleep 1
    record scale.rss "$(daemon_status VmRSS)"
    stop_daemon
done
fi

if want packs; then
echo "== managed asset pack: an essential pack of $pack_files files of 1 MiB, and one of a single $pack_files MiB file,"
echo "   installed by the service, against curl fetching the same archive and tar unpacking it"
    # FIGURE ID: the files in $work/FIGURE/files as the essential pack ID, its download manifest, and an Info.plist of a
    # managed app for it ($work/FIGURE.plist).
    essential_pack() {
        echo "{\"assetPackID\": \"$2\", \"downloadPolicy\": {\"essential\": {\"installationEventTypes\": [\"firstInstallation\"]}},
               \"fileSelectors\": [{\"directory\": \"files\"}]}" > "$work/$1/Manifest.json"
        "$bin/bahost" pack package "$work/$1/Manifest.json" -o "$work/www/$2" >/dev/null
        rm -rf "$work/$1/files"
        "$bin/bahost" pack download-manifest create "$work/www/$2" --download-base-url "$base" \
            --output-path "$work/www/$1.json" >/dev/null
        sed -e "s|$base/manifest|$base/$1.json|" \
            -e "s|<key>BAManifestURL</key>|<key>BAHasManagedAssetPacks</key><true/><key>BAManifestURL</key>|" \
            "$work/Info.plist" > "$work/$1.plist"
    }
    mkdir -p "$work/packs/files" "$work/packs1/files"
    for i in $(seq 1 "$pack_files"); do head -c 1048576 /dev/urandom > "$work/packs/files/$i.bin"; done
    essential_pack packs world
    # The same bytes as one file: an essential pack whose single file is as large as the other pack.
    head -c $((pack_files << 20)) /dev/urandom > "$work/packs1/files/whole.bin"
    essential_pack packs1 whole
    for _ in $(seq "$runs"); do
        # Validated, downloaded, checked file by file, unpacked, synced and swapped in when `bahost install` returns.
        for pack in packs:world packs1:whole; do
            figure=${pack%%:*} name=${pack#*:}
            # What the run before installed or unpacked is set aside, not deleted (as `fresh` does, and why).
            fresh; start_daemon "$work/$figure.plist"
            record "$figure.bahost" "$install_microseconds"
            stop_daemon
            mkdir -p "$work/trash"; mv "$work/service" "$(mktemp -d "$work/trash/XXXXXX")/"
            fresh; mkdir -p "$work/out/pack"
            t=$(now)
            curl -s -o "$work/out/pack/$name.tar.zst" "$base/$name"
            tar --zstd -xf "$work/out/pack/$name.tar.zst" -C "$work/out/pack"
            record "$figure.curl" "$(since "$t")"
        done
    done
    empty_trash
fi

if want network; then
    # Namespaces, veth pairs and tc need root; without it the figure says so, and is left out of the table.
    if [ "$(id -u)" -eq 0 ]; then
        echo "== background downloads beside the user's (network namespaces, a 40 Mbit/s router queue), $runs run(s)"
        BENCH_BIN=$bin Benchmarks/network.sh --runs "$runs" --seconds "$($smoke && echo 3 || echo 10)" \
            --outage "$($smoke && echo 5 || echo 30,150)" --record "$results"
    else
        echo "== network: skipped (needs root for network namespaces)"
    fi
fi

if want person; then
    echo "== what the person decides: a held background download released (a game's end, the charger, the schedule),"
    echo "   and a 2 MiB/s background ceiling, $runs run(s)"
    echo "big $big optional $base/big.bin" > "$work/www/person.manifest"
    BENCH_BIN=$bin Benchmarks/person.sh --manifest "$base/person.manifest" --plugin "$work/extension.so" --runs "$runs" \
        --seconds "$($smoke && echo 3 || echo 20)" --record "$results"
fi

if want peers; then
    # Namespaces again; one run in the full suite (a 1 GiB pack behind 20 Mbit/s takes minutes a machine).
    if [ "$(id -u)" -eq 0 ]; then
        echo "== machines sharing a pack on one network, behind a 20 Mbit/s line (network namespaces), 1 run"
        BAHOST_BIN=$bin Tests/Peers/lan.sh --size "$($smoke && echo $((16 << 20)) || echo $((1 << 30)))" \
            --record "$results"
    else
        echo "== peers: skipped (needs root for network namespaces)"
    fi
fi

python3 Benchmarks/table.py "$results" "$big" "$small_count" "$configuration" "$queue_count" "$scale_count" "${pack_files:-0}"
