#!/usr/bin/env bash
# Session listing benchmark: `turnstile sessions` and `turnstile resume --last` over a state
# root of many sessions, with the session index cold (missing: every journal is read and the
# index written), warm, and without it (`--no-index`, the way every listing worked before the
# index: read every journal).
#
#   scripts/bench-sessions.sh                # 100 000 sessions, 5 repetitions, median wall time
#   COUNT=20000 REPS=3 scripts/bench-sessions.sh
#
# Needs the release build; the generator is built here. Times are wall-clock medians with a
# warm page cache (the first, untimed run of each warms it).
set -euo pipefail

cd "$(dirname "$0")/.."
COUNT=${COUNT:-100000}
REPS=${REPS:-5}
BENCH=target/bench
ROOT=$BENCH/sessions-$COUNT
TURNSTILE=${TURNSTILE:-target/release/turnstile}
GEN=target/release/examples/gen_sessions

mkdir -p "$BENCH"
cargo build --release -q -p turnstile-journal --example gen_sessions
if [ ! -f "$ROOT/.complete" ]; then
    rm -rf "$ROOT"
    echo "generating $COUNT sessions in $ROOT..." >&2
    "$GEN" "$ROOT" "$COUNT"
    touch "$ROOT/.complete"
fi

# median of REPS runs of "$@" (stdout discarded), in seconds
median() {
    python3 - "$REPS" "$@" <<'PY'
import subprocess, sys, time
reps = int(sys.argv[1]); cmd = sys.argv[2:]
subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=True)
times = []
for _ in range(reps):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=True)
    times.append(time.perf_counter() - t)
times.sort()
print(f"{times[len(times)//2]:.3f}")
PY
}

# one run of "$@" with the index removed first, in seconds
cold() {
    python3 - "$ROOT/turnstile-index.jsonl" "$@" <<'PY'
import os, subprocess, sys, time
index = sys.argv[1]; cmd = sys.argv[2:]
times = []
for _ in range(3):
    if os.path.exists(index): os.remove(index)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, check=True)
    times.append(time.perf_counter() - t)
times.sort()
print(f"{times[1]:.3f}")
PY
}

S="$TURNSTILE --state-dir $ROOT"
# The listings must agree before anything is timed.
diff <($S sessions --json --no-index) <($S sessions --json) >/dev/null \
    || { echo "sessions output differs with and without the index" >&2; exit 1; }

echo "| command ($COUNT sessions) | median s |"
echo "|---|---:|"
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
