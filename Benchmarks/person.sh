#!/usr/bin/env bash
# What the person decides (docs/DOWNLOADS.md), measured against a real daemon: how soon a held background download
# goes again once its reason goes (the game ends, the charger is plugged in, the schedule opens), and the rate a
# background ceiling of 2 MiB/s leaves it. GameMode, UPower and power-profiles-daemon are python3-dbusmock stand-ins
# on a private bus (Debian's python3-dbusmock, with /usr/bin/python3); the download comes from the suite's nginx on loopback.
#
#   Benchmarks/person.sh --manifest URL --plugin EXTENSION.so --runs N --seconds S --record FILE
#
# The manifest (served on loopback) names one large optional download: `big SIZE optional URL`.
#
# BENCH_BIN is the folder of the programs (bahost, bahost-extension-runner). Records, per run:
#   person.resume.game|charger|schedule MICROSECONDS   from the release to the download's first bytes
#   person.rate BYTES_PER_SECOND                        over S seconds, with rate.background = 2M
set -euo pipefail
cd "$(dirname "$0")/.."

manifest="" plugin="" runs=1 seconds=20 record=""
while [ $# -gt 0 ]; do
    case "$1" in
        --manifest) manifest=$2; shift 2 ;;
        --plugin) plugin=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --record) record=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "person.sh: unknown argument '$1' (see --help)" >&2; exit 64 ;;
    esac
done
[ -n "$manifest" ] && [ -n "$plugin" ] && [ -n "$record" ] || { echo "person.sh: see --help" >&2; exit 64; }
bin=${BENCH_BIN:?BENCH_BIN names the programs\' folder}

work=$(mktemp -d /tmp/bahost-person.XXXXXX)
pids=() daemon=""
cleanup() {
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s%N; }
since() { echo $(( ($(now) - $1) / 1000 )); }

# The bus: one dbus-daemon as both the system and the session bus, the stand-ins on it.
bus="unix:path=$work/bus"
dbus-daemon --session --nofork --address="$bus" > "$work/dbus.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/bus" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS=$bus DBUS_SESSION_BUS_ADDRESS=$bus XDG_CONFIG_HOME=$work/config
for template in upower power_profiles_daemon; do
    /usr/bin/python3 -m dbusmock --system --template "$template" > "$work/$template.log" 2>&1 &
    pids+=($!)
done
gamemode=com.feralinteractive.GameMode
/usr/bin/python3 -m dbusmock "$gamemode" /com/feralinteractive/GameMode "$gamemode" > "$work/gamemode.log" 2>&1 &
pids+=($!)
call() { gdbus call --address "$bus" --dest "$1" --object-path "$2" --method "$3" "${@:4}" > /dev/null; }
owned() {
    gdbus call --address "$bus" --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus \
        --method org.freedesktop.DBus.NameHasOwner "$1" 2>/dev/null | grep -q true
}
for name in org.freedesktop.UPower net.hadess.PowerProfiles "$gamemode"; do
    for _ in $(seq 600); do owned "$name" && break; sleep 0.05; done
    owned "$name" || { echo "person.sh: $name did not appear on the bus: $(cat "$work"/*.log)" >&2; exit 1; }
done
call "$gamemode" /com/feralinteractive/GameMode org.freedesktop.DBus.Mock.AddProperty "$gamemode" ClientCount "<int32 0>"
game() { call "$gamemode" /com/feralinteractive/GameMode org.freedesktop.DBus.Properties.Set "$gamemode" ClientCount "<int32 $1>"; }
battery() {  # ON_BATTERY PERCENT
    call org.freedesktop.UPower /org/freedesktop/UPower/devices/DisplayDevice org.freedesktop.DBus.Mock.SetDeviceProperties \
        /org/freedesktop/UPower/devices/DisplayDevice "{'Type': <uint32 2>, 'IsPresent': <true>, 'Percentage': <$2.0>}"
    call org.freedesktop.UPower /org/freedesktop/UPower org.freedesktop.DBus.Properties.Set org.freedesktop.UPower \
        OnBattery "<$1>"
}

# The app: one background download of the suite's large file.
mkdir -p "$work/app"
cp "$plugin" "$work/app/extension.so"
cat > "$work/app/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
  <key>CFBundleIdentifier</key><string>com.example.bench</string>
  <key>BAAppGroupID</key><string>group.com.example.levels</string>
  <key>BAManifestURL</key><string>$manifest</string>
  <key>BAInitialDownloadRestrictions</key><dict>
    <key>BADownloadAllowance</key><integer>100000000000</integer>
    <key>BADownloadDomainAllowList</key><array><string>127.0.0.1</string></array>
  </dict>
  <key>BAMaxInstallSize</key><integer>100000000000</integer>
</dict></plist>
PLIST
bahost() { "$bin/bahost" "$@" --socket "$work/sock"; }
start() {  # the daemon, the app installed (its content request queues the download)
    rm -rf "$work/data"
    "$bin/bahost" daemon --socket "$work/sock" --data-root "$work/data" --allow-insecure-loopback --development \
        --apps-folder "$work/no-apps" --scheduler-interval 3600 > "$work/daemon.log" 2>&1 &
    daemon=$!
    for _ in $(seq 200); do [ -S "$work/sock" ] && break; sleep 0.05; done
    bahost install "$work/app" > /dev/null
}
stop() { kill "$daemon"; wait "$daemon" || true; daemon=""; rm -rf "$work/config"; }
big() {  # FIELD: the download's field in `bahost debug downloads --json`
    bahost debug downloads --app com.example.bench --json \
        | python3 -c "import json,sys; d=[x for x in json.load(sys.stdin)['downloads'] if x['identifier']=='big']; print(d[0].get('$1', '') if d else '')"
}
wait_for() {  # SECONDS CONDITION…
    local limit=$1; shift
    for _ in $(seq $((limit * 20))); do "$@" && return 0; sleep 0.05; done
    return 1
}
held() { [ -n "$(big heldBy)" ]; }
moving() { case "$(big state)" in downloading|finished) return 0 ;; *) return 1 ;; esac; }
release() {  # NAME HOLD RELEASE: the download held by HOLD, the time from RELEASE to its first bytes
    local name=$1 hold=$2 go=$3
    $hold
    start
    wait_for 20 held || { echo "person.sh: $name: the download was not held: $(big state) $(tail -3 "$work/daemon.log")" >&2; exit 1; }
    local t; t=$(now)
    $go
    wait_for 30 moving || { echo "person.sh: $name: the download did not go" >&2; exit 1; }
    echo "person.resume.$name $(since "$t")" >> "$record"
    stop
}
later() {  # the schedule's hours: opening in two hours, by this machine's clock (the daemon's moves forward)
    mkdir -p "$work/config/bahost"
    printf '[schedule]\nhours = "%s-%s"\n' "$(date -d '+2 hours' +%H:%M)" "$(date -d '+3 hours' +%H:%M)" \
        > "$work/config/bahost/settings.toml"
}
for _ in $(seq "$runs"); do
    release game "game 1" "game 0"
    release charger "battery true 20" "battery false 20"
    release schedule later "bahost debug clock --advance 7260"
    # The ceiling: 2 MiB/s for background downloads, measured over $seconds once it has run for two.
    mkdir -p "$work/config/bahost"
    printf '[rate]\nbackground = "2M"\n' > "$work/config/bahost/settings.toml"
    start
    wait_for 20 moving || { echo "person.sh: the capped download did not go" >&2; exit 1; }
    sleep 2
    # The partial file's length: what arrived, to the byte (the queue saves progress at intervals).
    part() { stat -c %s "$work"/data/transfers/*.part 2>/dev/null | head -1; }
    first=$(part) t=$(now)
    sleep "$seconds"
    last=$(part)
    echo "person.rate $(( (last - first) * 1000000 / $(since "$t") ))" >> "$record"
    stop
done
