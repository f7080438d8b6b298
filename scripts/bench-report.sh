#!/usr/bin/env bash
# `make bench-report`: how long `turnstile report` takes on the 2,002-turn fixture
# (fixtures/long-session), how big the page is, and how long headless Chromium takes to load it
# and paint a screenshot, next to an empty page's load (the browser's own start-up).
#
#   scripts/bench-report.sh                 # profiling-profile binary (release code), 5 runs each, median
#   TURNSTILE_BIN=target/debug/turnstile REPS=3 scripts/bench-report.sh
#
# Needs Chromium (`apt-get install -y chromium`, or TURNSTILE_CHROMIUM=/path). Offline.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}
BIN=${TURNSTILE_BIN:-target/profiling/turnstile}
CHROMIUM=${TURNSTILE_CHROMIUM:-chromium}
OUT=target/bench/report
mkdir -p "$OUT"
if [[ -z ${TURNSTILE_BIN:-} ]]; then
    cargo build --quiet --profile profiling -p turnstile --bin turnstile
fi
JOURNAL=fixtures/long-session/events.jsonl

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
now() { date +%s.%N; }

# load PAGE: "wall cpu" seconds for headless Chromium to load PAGE and write a screenshot; cpu
# is user + system (on a loaded machine the wall time mostly measures the scheduler, the CPU
# time much less). --single-process keeps the renderer in the process `time` measures.
load() {
    local profile start cpu
    profile=$(mktemp -d "$OUT/profile.XXXXXX")
    start=$(now)
    /usr/bin/time -f '%U %S' -o "$OUT/cpu" "$CHROMIUM" --headless --single-process --no-sandbox --disable-gpu \
        --no-first-run --user-data-dir="$profile" --window-size=1280,2400 \
        --screenshot="$OUT/shot.png" "file://$PWD/$1" >/dev/null 2>&1
    cpu=$(awk '{print $1 + $2}' "$OUT/cpu")
    echo "$(echo "$(now) - $start" | bc) $cpu"
    rm -rf "$profile"
}

printf '<!DOCTYPE html><title>empty</title>' >"$OUT/empty.html"
gen=() blank=() page=() blank_cpu=() page_cpu=()
for ((i = 0; i < REPS; i++)); do
    start=$(now)
    "$BIN" report "$JOURNAL" -o "$OUT/long-session.html" >/dev/null
    gen+=("$(echo "$(now) - $start" | bc)")
    read -r wall cpu <<<"$(load "$OUT/empty.html")"
    blank+=("$wall") blank_cpu+=("$cpu")
    read -r wall cpu <<<"$(load "$OUT/long-session.html")"
    page+=("$wall") page_cpu+=("$cpu")
done
G=$(printf '%s\n' "${gen[@]}" | median)
B=$(printf '%s\n' "${blank[@]}" | median)
P=$(printf '%s\n' "${page[@]}" | median)
BC=$(printf '%s\n' "${blank_cpu[@]}" | median)
PC=$(printf '%s\n' "${page_cpu[@]}" | median)
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: $BIN; journal: $JOURNAL ($(stat -c %s "$JOURNAL") bytes); median of $REPS"
printf '| measure | wall s | CPU s |\n|---|---:|---:|\n'
printf '| `turnstile report` (audit + two reads + writing %s bytes) | %.2f | |\n' "$(stat -c %s "$OUT/long-session.html")" "$G"
printf '| Chromium: empty page to screenshot | %.2f | %.2f |\n' "$B" "$BC"
printf '| Chromium: the report to screenshot | %.2f | %.2f |\n' "$P" "$PC"
printf '| the report page itself (difference) | %.2f | %.2f |\n' "$(echo "$P - $B" | bc)" "$(echo "$PC - $BC" | bc)"
