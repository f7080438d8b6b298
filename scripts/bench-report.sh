#!/usr/bin/env bash
# `make bench-report`: how long `turnstile report` takes on the 2,002-turn fixture
# (fixtures/long-session), how big the page is, and how long headless Chromium takes to load it
# and paint a screenshot, next to an empty page's load (the browser's own start-up).
#
#   scripts/bench-report.sh                 # release binary, 5 runs each, median
#   TURNSTILE_BIN=target/debug/turnstile REPS=3 scripts/bench-report.sh
#
# Needs Chromium (`apt-get install -y chromium`, or TURNSTILE_CHROMIUM=/path). Offline.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}
BIN=${TURNSTILE_BIN:-target/release/turnstile}
CHROMIUM=${TURNSTILE_CHROMIUM:-chromium}
OUT=target/bench/report
mkdir -p "$OUT"
if [[ -z ${TURNSTILE_BIN:-} ]]; then
    cargo build --quiet --release -p turnstile --bin turnstile
fi
JOURNAL=fixtures/long-session/events.jsonl

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
now() { date +%s.%N; }

# load PAGE: seconds for headless Chromium to load PAGE and write a screenshot.
load() {
    local profile start
    profile=$(mktemp -d "$OUT/profile.XXXXXX")
    start=$(now)
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile" \
        --window-size=1280,2400 --screenshot="$OUT/shot.png" "file://$PWD/$1" >/dev/null 2>&1
    echo "$(now) - $start" | bc
    rm -rf "$profile"
}

printf '<!DOCTYPE html><title>empty</title>' >"$OUT/empty.html"
gen=() blank=() page=()
for ((i = 0; i < REPS; i++)); do
    start=$(now)
    "$BIN" report "$JOURNAL" -o "$OUT/long-session.html" >/dev/null
    gen+=("$(echo "$(now) - $start" | bc)")
    blank+=("$(load "$OUT/empty.html")")
    page+=("$(load "$OUT/long-session.html")")
done
G=$(printf '%s\n' "${gen[@]}" | median)
B=$(printf '%s\n' "${blank[@]}" | median)
P=$(printf '%s\n' "${page[@]}" | median)
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: $BIN; journal: $JOURNAL ($(stat -c %s "$JOURNAL") bytes); median of $REPS"
printf '| measure | seconds |\n|---|---:|\n'
printf '| `turnstile report` (audit + two reads + writing %s bytes) | %.2f |\n' "$(stat -c %s "$OUT/long-session.html")" "$G"
printf '| Chromium: empty page to screenshot | %.2f |\n' "$B"
printf '| Chromium: the report to screenshot | %.2f |\n' "$P"
printf '| the report page itself (difference) | %.2f |\n' "$(echo "$P - $B" | bc)"
