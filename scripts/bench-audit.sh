#!/usr/bin/env bash
# Read-path benchmark: `turnstile audit` against grep on a generated, adversarial journal (both
# cores free, then with one core kept busy by a spinning process), the floors under any checking
# tool here (reading alone, JSON checked in memory, jq), the full fold, writing a
# checkpoint, resuming a 1 GB session whose checkpoint is stale, and the audit's peak memory on
# files of millions of tiny and blank lines. Instruction counts (callgrind) are printed next to
# the wall times: they do not move with the machine's load, wall times do.
#
#   scripts/bench-audit.sh                       # 400 MB journal, 7 runs each, median
#   SIZE_MB=100 BIG_MB=256 REPS=3 CALLGRIND=0 scripts/bench-audit.sh
#
# Builds what it needs (the `profiling` profile: release code with debug info), runs offline, writes its inputs under target/bench/. Every
# count is printed next to the true count (from the generator), so the table shows who is exact.
# `ratio` is the median wall time divided by that of the grep it is compared with.
set -euo pipefail

cd "$(dirname "$0")/.."
SIZE_MB=${SIZE_MB:-400}
BIG_MB=${BIG_MB:-1024}
REPS=${REPS:-7}
# Repetitions of the slower measures (fold, checkpoint).
SLOW_REPS=${SLOW_REPS:-3}
CALLGRIND=${CALLGRIND:-1}
BENCH=target/bench
JOURNAL=$BENCH/journal-${SIZE_MB}mb.jsonl
TRUTH=$JOURNAL.truth.json
BIG_ROOT=$BENCH/session-${BIG_MB}mb
BIG_ID=0b6f1c2e-5d4a-4f3b-9c8d-7e6f5a4b3c2d
CP_ROOT=$BENCH/checkpoint-${SIZE_MB}mb
TURNSTILE=target/profiling/turnstile
GEN=target/profiling/examples/gen_journal
TOOL=target/profiling/examples/replay_tool
FLOOR=target/profiling/examples/read_floor

mkdir -p "$BENCH"
echo "building turnstile, the generator and the harness (profiling profile)..." >&2
cargo build --quiet --profile profiling -p turnstile --bin turnstile
cargo build --quiet --profile profiling -p turnstile-replay --example gen_journal --example replay_tool \
    --example read_floor

if [[ ! -s $JOURNAL || ! -s $TRUTH ]]; then
    echo "generating $JOURNAL ($SIZE_MB MB)..." >&2
    "$GEN" --size-mb "$SIZE_MB" --seed 42 --out "$JOURNAL" >"$TRUTH"
fi
TRUE_TURNS=$(sed -E 's/.*"turns":([0-9]+).*/\1/' "$TRUTH")
BYTES=$(stat -c %s "$JOURNAL")

HAVE_TIME=0
[[ -x /usr/bin/time ]] && HAVE_TIME=1
HAVE_VALGRIND=0
[[ $CALLGRIND == 1 ]] && command -v valgrind >/dev/null && HAVE_VALGRIND=1

# median of numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# run_timed REPS OUTFILE CMD... : median wall seconds of REPS runs (stdout of the last run
# kept); with /usr/bin/time, also the median CPU seconds (user + system) in $CPU_S.
run_timed() {
    local reps=$1 out=$2
    shift 2
    local times=() cpus=() t
    for ((i = 0; i < reps; i++)); do
        if ((HAVE_TIME)); then
            /usr/bin/time -f "%e %U %S" -o "$out.time" "$@" >"$out" 2>/dev/null || true
            # The last line: a failing command gets a status line first.
            read -r t u s < <(tail -1 "$out.time")
            cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')")
        else
            t=$({ TIMEFORMAT=%R; time "$@" >"$out" 2>/dev/null; } 2>&1) || true
        fi
        times+=("$t")
    done
    if ((HAVE_TIME)); then
        printf '%s\n' "${cpus[@]}" | median >"$out.cpu"
    else
        echo - >"$out.cpu"
    fi
    printf '%s\n' "${times[@]}" | median
}
# cpu_of OUTFILE : the median CPU seconds of the last run_timed into OUTFILE
cpu_of() { cat "$1.cpu"; }

# peak_kb CMD... : maximum resident set size in KB of one run
peak_kb() {
    if ((HAVE_TIME)); then
        # Not /dev/null: GNU grep stops at the first match when its output is /dev/null.
        /usr/bin/time -f %M "$@" 2>&1 >"$OUT.peak" | tail -1
    else
        echo "-"
    fi
}

# instructions CMD... : instructions executed (all threads), from callgrind
instructions() {
    if ((HAVE_VALGRIND)); then
        valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >"$OUT.ir" |
            sed -nE 's/.*Collected : ([0-9]+).*/\1/p' | tail -1
    else
        echo "-"
    fi
}

# thread_counts CMD... : instructions of each thread, busiest first (the busiest is the critical
# path with a core per thread), from callgrind's per-thread counts
thread_counts() {
    if ((HAVE_VALGRIND)); then
        local dir
        dir=$(mktemp -d "$BENCH/cg.XXXXXX")
        valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/cg" "$@" \
            >/dev/null 2>&1
        sed -nE 's/^summary: ([0-9]+)/\1/p' "$dir"/cg* | sort -gr |
            awk '{ printf "%s%.0f M", (NR > 1 ? " + " : ""), $1 / 1e6 }'
        rm -rf "$dir"
    else
        echo "-"
    fi
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
millions() { [[ $1 == - ]] && echo - || awk -v n="$1" 'BEGIN { printf "%.0f M", n / 1e6 }'; }

OUT=$(mktemp)
SPIN_PID=
cleanup() {
    rm -f "$OUT" "$OUT.ir" "$OUT.time" "$OUT.cpu" "$OUT.peak"
    [[ -n $SPIN_PID ]] && kill "$SPIN_PID" 2>/dev/null || true
}
trap cleanup EXIT
row() { printf '%-50s %8s %6s %9s %6s %6s %9s %10s\n' "$@"; }

# A warm page cache for everyone.
cat "$JOURNAL" >/dev/null

COUNT=("$TURNSTILE" audit --count assistant.turn_start "$JOURNAL")
AUDIT=("$TURNSTILE" audit --json "$JOURNAL")
GREP_C=(grep -c assistant.turn_start "$JOURNAL")
GREP_CF=(grep -cF '"type":"assistant.turn_start"' "$JOURNAL")

# side_by_side LABEL : the four commands, each against its grep
side_by_side() {
    echo
    echo "$1 -- load average $(cut -d' ' -f1-3 /proc/loadavg); $REPS runs each, median"
    row "command" "count" "exact" "median s" "ratio" "cpu s" "peak KB" "instr."
    local t_gc t_gcf t n c_gc c_gcf
    t_gc=$(run_timed "$REPS" "$OUT" "${GREP_C[@]}")
    GREP_C_S=$t_gc
    c_gc=$(cpu_of "$OUT")
    local n_gc
    n_gc=$(tr -dc 0-9 <"$OUT")
    t_gcf=$(run_timed "$REPS" "$OUT" "${GREP_CF[@]}")
    c_gcf=$(cpu_of "$OUT")
    local n_gcf
    n_gcf=$(tr -dc 0-9 <"$OUT")
    t=$(run_timed "$REPS" "$OUT" "${AUDIT[@]}")
    n=$(grep -m1 -E '^  "turns": ' "$OUT" | tr -dc 0-9)
    row "turnstile audit --json (every check)" "$n" "$([[ $n == "$TRUE_TURNS" ]] && echo yes || echo NO)" "$t" "$(ratio "$t" "$t_gc")" "$(cpu_of "$OUT")" "$(peak_kb "${AUDIT[@]}")" "${AUDIT_IR:--}"
    row "  vs grep -c assistant.turn_start" "$n_gc" "$([[ $n_gc == "$TRUE_TURNS" ]] && echo yes || echo NO)" "$t_gc" "1" "$c_gc" "$(peak_kb "${GREP_C[@]}")" "${GREP_C_IR:--}"
    t=$(run_timed "$REPS" "$OUT" "${COUNT[@]}")
    n=$(tr -dc 0-9 <"$OUT")
    row "turnstile audit --count assistant.turn_start" "$n" "$([[ $n == "$TRUE_TURNS" ]] && echo yes || echo NO)" "$t" "$(ratio "$t" "$t_gcf")" "$(cpu_of "$OUT")" "$(peak_kb "${COUNT[@]}")" "${COUNT_IR:--}"
    row "  vs grep -cF '\"type\":\"assistant.turn_start\"'" "$n_gcf" "$([[ $n_gcf == "$TRUE_TURNS" ]] && echo yes || echo NO)" "$t_gcf" "1" "$c_gcf" "$(peak_kb "${GREP_CF[@]}")" "${GREP_CF_IR:--}"
}

echo
echo "journal: $JOURNAL ($BYTES bytes), true assistant.turn_start count: $TRUE_TURNS"
echo "machine: $(nproc) cores; wc -l reads it in $(run_timed 3 "$OUT" wc -l "$JOURNAL") s"

if ((HAVE_VALGRIND)); then
    echo "counting instructions (callgrind; load-independent)..." >&2
    AUDIT_IR=$(millions "$(instructions "${AUDIT[@]}")")
    COUNT_IR=$(millions "$(instructions "${COUNT[@]}")")
    GREP_C_IR=$(millions "$(instructions "${GREP_C[@]}")")
    GREP_CF_IR=$(millions "$(instructions "${GREP_CF[@]}")")
fi

side_by_side "both cores free (other work on the machine is not stopped)"
IDLE_GREP_C_S=$GREP_C_S

# What no checking tool can go under here, on the audit's two threads: reading the file with
# nothing done to the bytes, and validating every line with the bytes already in memory; and jq,
# the tool a user would otherwise check a journal's JSON with.
echo
echo "floors (read_floor, $REPS runs each, median; both cores free):"
# Captured first: a failing read_floor stops the benchmark (set -e) instead of printing nothing.
FLOORS=$("$FLOOR" "$JOURNAL" --threads 2 --reps "$REPS")
while read -r name t; do
    printf '  %-28s %8s s  (%s of grep -c)\n' "$name" "$t" "$(ratio "$t" "$IDLE_GREP_C_S")"
done <<<"$FLOORS"
if command -v jq >/dev/null; then
    t=$(run_timed 3 "$OUT" jq empty "$JOURNAL")
    printf '  %-28s %8s s  (%s of grep -c; every line parsed, one thread)\n' "jq empty" "$t" "$(ratio "$t" "$IDLE_GREP_C_S")"
fi
printf '  %-28s %8s s  (the audit --json target, 0.35 of grep -c)\n' "target" "$(awk -v g="$IDLE_GREP_C_S" 'BEGIN { printf "%.4f", 0.35 * g }')"

# One core kept busy: a spinning shell loop, ended by its pid afterwards.
bash -c 'while :; do :; done' &
SPIN_PID=$!
side_by_side "one core busy (a spinning process)"
kill "$SPIN_PID" 2>/dev/null || true
wait "$SPIN_PID" 2>/dev/null || true
SPIN_PID=

echo
echo "full fold of $JOURNAL (SessionState: the conversation as the model sees it next):"
t=$(run_timed "$SLOW_REPS" "$OUT" "$TOOL" fold "$JOURNAL")
echo "  median wall ${t}s, cpu $(cpu_of "$OUT")s, peak $(peak_kb "$TOOL" fold "$JOURNAL") KB, $(millions "$(instructions "$TOOL" fold "$JOURNAL")") instructions   $(cat "$OUT")"
echo "  per thread, busiest first: $(thread_counts "$TOOL" fold "$JOURNAL") instructions (the busiest is the fold's critical path on two free cores)"

echo
echo "turnstile checkpoint of a ${SIZE_MB} MB session (full fold + CRC32C + atomic write):"
CP_DIR=$CP_ROOT/$BIG_ID
mkdir -p "$CP_DIR"
[[ -s $CP_DIR/events.jsonl ]] || cp "$JOURNAL" "$CP_DIR/events.jsonl"
TIMES=()
for ((i = 0; i < SLOW_REPS; i++)); do
    rm -f "$CP_DIR/checkpoint.json"
    TIMES+=("$({ TIMEFORMAT=%R; time "$TURNSTILE" checkpoint "$CP_DIR" >/dev/null 2>&1; } 2>&1)")
done
rm -f "$CP_DIR/checkpoint.json"
echo "  median wall $(printf '%s\n' "${TIMES[@]}" | median)s, peak $(peak_kb "$TURNSTILE" checkpoint "$CP_DIR") KB"

echo
echo "resume of a ${BIG_MB} MB session whose checkpoint is stale (the journal was copied: new inode):"
BIG=$BIG_ROOT/$BIG_ID
if [[ ! -s $BIG/events.jsonl ]]; then
    mkdir -p "$BIG"
    echo "  generating..." >&2
    "$GEN" --size-mb "$BIG_MB" --seed 1024 --out "$BIG/events.jsonl" >/dev/null
fi
TIMES=()
CPUS=()
for ((i = 0; i < 3; i++)); do
    # A fresh copy each time: the resume appends to the journal and rewrites its checkpoint.
    rm -rf "$BIG.run"
    cp -r "$BIG" "$BIG.run"
    "$TURNSTILE" checkpoint "$BIG.run" >/dev/null
    cp "$BIG.run/events.jsonl" "$BIG.run/events.copy" && mv "$BIG.run/events.copy" "$BIG.run/events.jsonl"
    cat "$BIG.run/events.jsonl" >/dev/null
    mkdir -p "$BIG_ROOT/run"
    rm -rf "${BIG_ROOT:?}/run/$BIG_ID"
    mv "$BIG.run" "$BIG_ROOT/run/$BIG_ID"
    TIMES+=("$(run_timed 1 "$OUT" "$TURNSTILE" --state-dir "$BIG_ROOT/run" resume "$BIG_ID" </dev/null)")
    CPUS+=("$(cpu_of "$OUT")")
done
echo "  median of 3: wall $(printf '%s\n' "${TIMES[@]}" | median)s, cpu $(printf '%s\n' "${CPUS[@]}" | median)s (lock, one fold, checkpoint, resume plan, shutdown)"
run_timed 1 "$OUT" "$TOOL" fold "$BIG/events.jsonl" >/dev/null
echo "  for comparison, one bare fold of the same journal: cpu $(cpu_of "$OUT")s"
"$TOOL" load "$BIG_ROOT/run/$BIG_ID" 2>/dev/null | sed 's/^/  then loading it: /'
rm -rf "${BIG_ROOT:?}/run"

echo
echo "audit peak memory on files of many short lines:"
TINY=$BENCH/tiny-5m.jsonl
BLANK=$BENCH/blank-80m.jsonl
[[ -s $TINY ]] || awk 'BEGIN { for (i = 0; i < 5000000; i++) print "{}" }' >"$TINY"
[[ -s $BLANK ]] || awk 'BEGIN { for (i = 0; i < 80000000; i++) print "" }' >"$BLANK"
for f in "$TINY" "$BLANK"; do
    echo "  $(basename "$f") ($(stat -c %s "$f") bytes): audit peak $(peak_kb "$TURNSTILE" audit --json "$f") KB, --count peak $(peak_kb "$TURNSTILE" audit --count x "$f") KB (bound: 65536 KB)"
done
