#!/usr/bin/env bash
# Audit benchmark: `turnstile audit` against grep (and jq) on a generated, adversarial journal,
# plus full-fold time and memory, and loading a 1 GB session with and without a checkpoint.
#
#   scripts/bench-audit.sh                 # 400 MB journal, 5 repetitions, median wall time
#   SIZE_MB=100 REPS=3 scripts/bench-audit.sh
#
# Needs the release build (`cargo build --release`); the journal generator and the library's
# command-line harness (`replay_tool`) are built here. When target/release/turnstile has no
# `audit` subcommand yet, the harness (same library calls) stands in for it and says so.
# Every count is printed next to the true count (from the generator), so the table shows who
# is exact. Times are wall-clock medians with a warm page cache; `peak KB` is the maximum
# resident set size from /usr/bin/time.
set -euo pipefail

cd "$(dirname "$0")/.."
SIZE_MB=${SIZE_MB:-400}
BIG_MB=${BIG_MB:-1024}
REPS=${REPS:-5}
JQ_REPS=${JQ_REPS:-1}
BENCH=target/bench
JOURNAL=$BENCH/journal-${SIZE_MB}mb.jsonl
TRUTH=$JOURNAL.truth.json
SESSION=$BENCH/session-${BIG_MB}mb/0b6f1c2e-5d4a-4f3b-9c8d-7e6f5a4b3c2d
TURNSTILE=${TURNSTILE:-target/release/turnstile}
GEN=target/release/examples/gen_journal
TOOL=target/release/examples/replay_tool

mkdir -p "$BENCH"
echo "building the generator and the harness (release)..." >&2
cargo build --quiet --release -p turnstile-replay --example gen_journal --example replay_tool

if [[ -x $TURNSTILE ]] && "$TURNSTILE" audit --help >/dev/null 2>&1; then
    AUDIT=("$TURNSTILE" audit)
    CHECKPOINT=("$TURNSTILE" checkpoint)
    WHO="turnstile"
else
    echo "note: $TURNSTILE has no 'audit' subcommand yet; timing the library through $TOOL instead" >&2
    AUDIT=("$TOOL" audit)
    CHECKPOINT=("$TOOL" checkpoint)
    WHO="replay_tool"
fi

if [[ ! -s $JOURNAL || ! -s $TRUTH ]]; then
    echo "generating $JOURNAL ($SIZE_MB MB)..." >&2
    "$GEN" --size-mb "$SIZE_MB" --seed 42 --out "$JOURNAL" >"$TRUTH"
fi
TRUE_TURNS=$(sed -E 's/.*"turns":([0-9]+).*/\1/' "$TRUTH")
BYTES=$(stat -c %s "$JOURNAL")

HAVE_TIME=0
[[ -x /usr/bin/time ]] && HAVE_TIME=1

# median of numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# run_timed REPS OUTFILE CMD... : median wall seconds of REPS runs (stdout of the last run kept)
run_timed() {
    local reps=$1 out=$2
    shift 2
    local times=() t
    for ((i = 0; i < reps; i++)); do
        t=$({ TIMEFORMAT=%R; time "$@" >"$out" 2>/dev/null; } 2>&1) || true
        times+=("$t")
    done
    printf '%s\n' "${times[@]}" | median
}

# peak_kb CMD... : maximum resident set size in KB of one run
peak_kb() {
    if ((HAVE_TIME)); then
        /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
    else
        echo "-"
    fi
}

# A warm page cache for everyone.
cat "$JOURNAL" >/dev/null

OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
row() { printf '%-52s %12s %6s %9s %10s\n' "$@"; }

echo
echo "journal: $JOURNAL ($BYTES bytes), true assistant.turn_start count: $TRUE_TURNS"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $REPS runs each, median"
echo
row "command" "count" "exact" "median s" "peak KB"

t=$(run_timed "$REPS" "$OUT" "${AUDIT[@]}" --json "$JOURNAL")
n=$(grep -m1 -E '^  "turns": ' "$OUT" | tr -dc 0-9)
row "$WHO audit --json (all invariants)" "$n" "$([[ $n == "$TRUE_TURNS" ]] && echo yes || echo NO)" "$t" "$(peak_kb "${AUDIT[@]}" --json "$JOURNAL")"

if [[ $WHO == turnstile ]]; then COUNT=("${AUDIT[@]}" --count assistant.turn_start "$JOURNAL"); else COUNT=("$TOOL" count assistant.turn_start "$JOURNAL"); fi
t=$(run_timed "$REPS" "$OUT" "${COUNT[@]}")
n=$(tr -dc 0-9 <"$OUT")
row "$WHO audit --count assistant.turn_start" "$n" "$([[ $n == "$TRUE_TURNS" ]] && echo yes || echo NO)" "$t" "$(peak_kb "${COUNT[@]}")"

t=$(run_timed "$REPS" "$OUT" grep -c assistant.turn_start "$JOURNAL")
n=$(tr -dc 0-9 <"$OUT")
row "grep -c assistant.turn_start" "$n" "$([[ $n == "$TRUE_TURNS" ]] && echo yes || echo NO)" "$t" "$(peak_kb grep -c assistant.turn_start "$JOURNAL")"

t=$(run_timed "$REPS" "$OUT" grep -cF '"type":"assistant.turn_start"' "$JOURNAL")
n=$(tr -dc 0-9 <"$OUT")
row "grep -cF '\"type\":\"assistant.turn_start\"'" "$n" "$([[ $n == "$TRUE_TURNS" ]] && echo yes || echo NO)" "$t" "$(peak_kb grep -cF '"type":"assistant.turn_start"' "$JOURNAL")"

if command -v jq >/dev/null; then
    JQ=(jq -n 'reduce inputs as $e (0; if $e.type == "assistant.turn_start" then . + 1 else . end)' "$JOURNAL")
    t=$(run_timed "$JQ_REPS" "$OUT" "${JQ[@]}")
    n=$(tr -dc 0-9 <"$OUT")
    row "jq (select .type == \"assistant.turn_start\")" "$n" "$([[ $n == "$TRUE_TURNS" ]] && echo yes || echo NO)" "$t" "$(peak_kb "${JQ[@]}")"
else
    row "jq (not installed)" "-" "-" "-" "-"
fi

echo
echo "full fold of $JOURNAL (state with the conversation as the model sees it):"
t=$(run_timed 1 "$OUT" "$TOOL" fold "$JOURNAL")
echo "  $(cat "$OUT")"
echo "  wall ${t}s, peak $(peak_kb "$TOOL" fold "$JOURNAL") KB"

echo
echo "loading a ${BIG_MB} MB session ($SESSION):"
if [[ ! -s $SESSION/events.jsonl ]]; then
    mkdir -p "$SESSION"
    echo "  generating..." >&2
    "$GEN" --size-mb "$BIG_MB" --seed 1024 --out "$SESSION/events.jsonl" >/dev/null
fi
cat "$SESSION/events.jsonl" >/dev/null
rm -f "$SESSION/checkpoint.json"
t=$(run_timed 1 "$OUT" "$TOOL" load "$SESSION")
echo "  without checkpoint (full fold):   ${t}s   $(cat "$OUT")"
t=$(run_timed 1 "$OUT" "${CHECKPOINT[@]}" "$SESSION")
echo "  writing the checkpoint:           ${t}s   ($(stat -c %s "$SESSION/checkpoint.json") bytes)"
LOADS=()
for ((i = 0; i < REPS; i++)); do
    LOADS+=("$("$TOOL" load "$SESSION" 2>&1 >/dev/null | sed -E 's/load: //')")
done
t=$(run_timed "$REPS" "$OUT" "$TOOL" load "$SESSION")
echo "  with checkpoint: process wall ${t}s, load() itself: ${LOADS[*]}   $(cat "$OUT")"
t=$(run_timed 1 "$OUT" "$TOOL" verify "$SESSION")
echo "  verify (CRC32C of the whole prefix + refold): ${t}s   $(cat "$OUT")"
