#!/usr/bin/env bash
# `make stress`: the long variants of the bounds' tests, in named sections.
#
#   bash scripts/stress.sh [SECTION...]     (no section: all of them)
#
# The tests run in the test profile (dependencies at opt-level 1), as `make test` builds them.
# Each section stops by itself (every step runs under `timeout`) and prints its figures:
# peak RSS (`/usr/bin/time -v`, or the server's VmHWM) and wall time.
#   model    one model answer with 1,000 `bash` calls (at most 3 running at once), 1,000 new
#            tool-call indexes against the cap, the hostile streams against the timeouts
#   server   1,000 idle connections against a server limited to 1024 descriptors
#   journal  a 1 GB journal line and a 2 GB sparse journal through the journal crate's readers
#            (limits of 64 KiB and the default 256 MiB), then (STRESS_COMMANDS=1) through
#            fsck, events, audit, report, export, import, replay and repair
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}
WORK=${STRESS_DIR:-$TARGET/stress}
mkdir -p "$WORK"

# Runs a test command; prints its figures and fails unless the tests passed.
run_tests() {
  local out
  out=$("$@" 2>&1) || { printf '%s\n' "$out" | tail -40; return 1; }
  printf '%s\n' "$out" | grep -E "FIGURES|test result"
}

# Runs a command under /usr/bin/time; prints `name peak_rss_mib wall_s exit`.
measure() {
  local name=$1; shift
  local log="$WORK/$name.time"
  local code=0
  timeout 600 /usr/bin/time -v "$@" >"$WORK/$name.out" 2>"$log" || code=$?
  local rss wall
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$log")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
  printf '%-28s peak RSS %8s MiB  wall %10s  exit %s\n' "$name" "$rss" "$wall" "$code"
}

section_model() {
  echo "== model: 1,000 calls in one answer, hostile streams"
  "$CARGO" test -p turnstile-providers -p turnstile-loop --no-run
  TURNSTILE_STRESS_CALLS=1000 /usr/bin/time -f 'model_bounds: %e s, peak RSS %M KB' \
    timeout 900 "$CARGO" test -q -p turnstile-providers --test integration -- model_bounds::
  TURNSTILE_STRESS_CALLS=1000 /usr/bin/time -f 'tool fan-out: %e s, peak RSS %M KB' \
    timeout 900 "$CARGO" test -q -p turnstile-loop --test integration -- \
    bounds::tool_calls_of_one_answer
}

section_server() {
  echo "== server: 1,000 idle connections, RLIMIT_NOFILE 1024"
  # The test's child server runs with the descriptor limit it sets; the flood comes from the
  # test process, which needs room for 1,000 sockets of its own.
  ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  TURNSTILE_FLOOD_CONNECTIONS=1000 TURNSTILE_FLOOD_NOFILE=1024 \
    run_tests timeout 600 "$CARGO" test -p turnstile-server --test integration -- \
    --nocapture --test-threads=1 \
    connection_limit::the_default_limit_keeps_descriptors_for_established_sessions_under_a_flood \
    connection_limit::accept_errors_at_the_descriptor_limit_back_off_with_a_rate_limited_warning
}

section_journal() {
  echo "== journal: a 1 GB line, a 2 GB sparse file, through the scan, the reader and the salvage"
  for limit in 65536 268435456; do
    TURNSTILE_STRESS_LIMIT=$limit TURNSTILE_STRESS_LINE_BYTES=1073741824 \
      TURNSTILE_STRESS_SPARSE_BYTES=2147483648 \
      run_tests timeout 900 "$CARGO" test -p turnstile-journal --test integration -- \
      --nocapture huge_lines::a_line_over_the_limit
  done
  # The commands themselves need a release build of the whole binary: STRESS_COMMANDS=1.
  [ "${STRESS_COMMANDS:-0}" = 1 ] || return 0
  echo "== journal: the same files through the commands (release build of turnstile)"
  "$CARGO" build --release -p turnstile
  local bin=$TARGET/release/turnstile
  local start='{"type":"session.start","data":{"sessionId":"5e2a3c1e-0000-4000-8000-000000000001","version":1,"producer":"copilot-agent","copilotVersion":"0.0.0","startTime":"2026-11-29T14:34:34.757Z"},"id":"00000000-0000-4000-8000-000000000001","timestamp":"2026-11-29T14:34:34.757Z","parentId":null}'
  local after='{"type":"session.info","data":{"message":"after"},"id":"00000000-0000-4000-8000-000000000003","timestamp":"2026-11-29T14:34:35.757Z","parentId":"00000000-0000-4000-8000-000000000001"}'
  local huge=$WORK/huge-line/events.jsonl
  mkdir -p "$(dirname "$huge")"
  python3 - "$huge" "$start" "$after" <<'PY'
import sys
path, start, after = sys.argv[1:4]
with open(path, "wb") as f:
    f.write(start.encode() + b"\n")
    f.write(b'{"type":"user.message","data":{"content":"')
    chunk = b"x" * (1 << 20)
    for _ in range(1024):
        f.write(chunk)
    f.write(b'"},"id":"00000000-0000-4000-8000-000000000002","timestamp":"2026-11-29T14:34:35.000Z","parentId":"00000000-0000-4000-8000-000000000001"}\n')
    f.write(after.encode() + b"\n")
PY
  local sparse=$WORK/sparse/events.jsonl
  mkdir -p "$(dirname "$sparse")"
  printf '%s\n' "$start" >"$sparse"
  truncate -s 2G "$sparse"
  for cmd in fsck events audit; do
    measure "$cmd-1GB-line" "$bin" "$cmd" "$huge"
    measure "$cmd-2GB-sparse" "$bin" "$cmd" "$sparse"
  done
  measure "report-1GB-line" "$bin" report "$huge" --output "$WORK/huge.html"
  measure "report-2GB-sparse" "$bin" report "$sparse" --output "$WORK/sparse.html"
  # export reads a session of a state directory: both journals are linked into one.
  local state=$WORK/state imported=$WORK/imported
  local huge_id=5e2a3c1e-0000-4000-8000-000000000001 sparse_id=5e2a3c1e-0000-4000-8000-000000000002
  rm -rf "$state" "$imported"
  mkdir -p -m 700 "$state" "$state/$huge_id" "$state/$sparse_id"
  ln "$huge" "$state/$huge_id/events.jsonl" 2>/dev/null || cp "$huge" "$state/$huge_id/events.jsonl"
  ln "$sparse" "$state/$sparse_id/events.jsonl" 2>/dev/null || cp --sparse=always "$sparse" "$state/$sparse_id/events.jsonl"
  measure "export-1GB-line" "$bin" --state-dir "$state" export "$huge_id" --output /dev/null
  measure "export-2GB-sparse" "$bin" --state-dir "$state" export "$sparse_id" --output /dev/null
  measure "import-1GB-line" "$bin" --state-dir "$imported" import "$huge"
  measure "import-2GB-sparse" "$bin" --state-dir "$imported" import "$sparse" --session-id "$sparse_id"
  measure "replay-1GB-line" "$bin" replay "$huge"
  measure "replay-2GB-sparse" "$bin" replay "$sparse"
  rm -rf "$state" "$imported"
  cp "$huge" "$WORK/huge-line/events.jsonl.orig"
  measure "repair-salvage-1GB-line" "$bin" repair --salvage "$huge"
  measure "repair-2GB-sparse" "$bin" repair "$sparse"
  rm -rf "$WORK/huge-line" "$WORK/sparse"
}

sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(model server journal)
for s in "${sections[@]}"; do
  if ! declare -F "section_$s" >/dev/null; then
    echo "stress.sh: no section '$s'" >&2
    exit 2
  fi
  "section_$s"
done
