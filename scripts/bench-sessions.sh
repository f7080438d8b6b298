#!/usr/bin/env bash
# Session listing benchmark: `turnstile sessions` and `turnstile resume --last` over a state
# root of many sessions, with the session index cold (missing: every journal is read and the
# index written), warm, and without it (`--no-index`, the way every listing worked before the
# index: read every journal).
#
#   scripts/bench-sessions.sh                # 100 000 sessions, 5 repetitions, median wall time
#   COUNT=20000 REPS=3 scripts/bench-sessions.sh
#
# Builds the profiling profile (release code with debug info); the generator is built here. Times are medians of the wall time and
# of the CPU time (user + sys, all threads) with a warm page cache (the first, untimed run of
# each warms it); on a shared machine the CPU time is the steadier figure.
set -euo pipefail

cd "$(dirname "$0")/.."
COUNT=${COUNT:-100000}
REPS=${REPS:-5}
BENCH=target/bench
ROOT=$BENCH/sessions-$COUNT
TURNSTILE=${TURNSTILE:-target/profiling/turnstile}
GEN=target/profiling/examples/gen_sessions

mkdir -p "$BENCH"
cargo build --profile profiling -q -p turnstile-journal --example gen_sessions
if [ ! -f "$ROOT/.complete" ]; then
    rm -rf "$ROOT"
    echo "generating $COUNT sessions in $ROOT..." >&2
    "$GEN" "$ROOT" "$COUNT"
    touch "$ROOT/.complete"
fi

# "wall | cpu": medians over REPS runs of "$@" (output discarded) of the wall time and of the
# CPU time (user + sys of the process and its threads), in seconds. With INDEX set, the index
# is removed before each run (a cold listing).
median() {
    python3 - "$REPS" "${INDEX:-}" "$@" <<'PY'
import os, resource, subprocess, sys, time
reps = int(sys.argv[1]); index = sys.argv[2]; cmd = sys.argv[3:]
def run():
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=True)
if not index: run()
walls, cpus = [], []
for _ in range(reps):
    if index and os.path.exists(index): os.remove(index)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    run()
    walls.append(time.perf_counter() - t)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
walls.sort(); cpus.sort()
print(f"{walls[len(walls)//2]:.3f} | {cpus[len(cpus)//2]:.3f}")
PY
}
cold() { INDEX="$ROOT/turnstile-index.jsonl" median "$@"; }

S="$TURNSTILE --state-dir $ROOT"
# The listings must agree before anything is timed.
diff <($S sessions --json --no-index) <($S sessions --json) >/dev/null \
    || { echo "sessions output differs with and without the index" >&2; exit 1; }

# ... and, given a previous binary, its listing byte for byte.
if [ -n "${PREVIOUS:-}" ] && [ -x "$PREVIOUS" ]; then
    diff <("$PREVIOUS" --state-dir "$ROOT" sessions) <($S sessions) >/dev/null \
        || { echo "sessions output differs from $PREVIOUS" >&2; exit 1; }
fi

echo "| command ($COUNT sessions) | wall s | CPU s |"
echo "|---|---:|---:|"
echo "| \`sessions --no-index\` (reads every journal) | $(median $S sessions --no-index) |"
echo "| \`sessions\`, index cold (reads every journal, writes the index) | $(cold $S sessions) |"
echo "| \`sessions\`, index warm | $(median $S sessions) |"
echo "| \`sessions --json\`, index warm | $(median $S sessions --json) |"
echo "| \`resume --last < /dev/null\`, index warm (lock, recovery scan, resume plan, shutdown) | $(median $S resume --last) |"
if [ -n "${PREVIOUS:-}" ] && [ -x "$PREVIOUS" ]; then
    P="$PREVIOUS --state-dir $ROOT"
    echo "| previous binary \`sessions\` ($PREVIOUS) | $(median $P sessions) |"
    echo "| previous binary \`resume --last < /dev/null\` | $(median $P resume --last) |"
fi
