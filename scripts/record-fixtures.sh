#!/usr/bin/env bash
# `make fixtures`: records every turnstile fixture in fixtures/ again, with turnstile itself.
#
# Each fixture's inputs are committed next to its recording:
#   fixtures/NAME/workdir/            the files the session works on (copied, never changed)
#   fixtures/NAME/model-script.json   the scripted model's answers (@CWD@ = the working dir)
#   fixtures/NAME/fixture.json        optional settings the replay needs (permissions, ...)
# and this script runs the session the fixture shows (crash, abort, resume, ...) against the
# workspace's scripted model server on 127.0.0.1, then copies the journal to
# fixtures/NAME/events.jsonl. No network. Usage: scripts/record-fixtures.sh [NAME...]
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT=${TURNSTILE_RECORD_DIR:-/tmp/turnstile-record}
# TURNSTILE_RECORD_PROFILE=debug records with the dev build (no release build needed).
PROFILE=${TURNSTILE_RECORD_PROFILE:-release}
case "$PROFILE" in
  release) BUILD_FLAGS=(--release) ;;
  debug) BUILD_FLAGS=() ;;
  *) echo "TURNSTILE_RECORD_PROFILE must be release or debug, not $PROFILE" >&2; exit 2 ;;
esac
BIN=${CARGO_TARGET_DIR:-target}/$PROFILE/turnstile
MODEL=${CARGO_TARGET_DIR:-target}/$PROFILE/scripted-model
ALL=(multi-turn autopilot crash-resume model-error abort permission-denied hook-rewrite long-session subagents)
NAMES=("$@")
[ ${#NAMES[@]} -gt 0 ] || NAMES=("${ALL[@]}")

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

cargo build "${BUILD_FLAGS[@]}" --quiet -p turnstile -p turnstile-scripted-model

# Fixed session ids keep re-recordings easy to diff.
session_id() {
  case "$1" in
    multi-turn) echo 5e55a0e1-0000-4000-8000-000000000001 ;;
    autopilot) echo 5e55a0e1-0000-4000-8000-000000000002 ;;
    crash-resume) echo 5e55a0e1-0000-4000-8000-000000000003 ;;
    model-error) echo 5e55a0e1-0000-4000-8000-000000000004 ;;
    abort) echo 5e55a0e1-0000-4000-8000-000000000005 ;;
    permission-denied) echo 5e55a0e1-0000-4000-8000-000000000006 ;;
    hook-rewrite) echo 5e55a0e1-0000-4000-8000-000000000007 ;;
    long-session) echo 5e55a0e1-0000-4000-8000-000000000008 ;;
    subagents) echo 5e55a0e1-0000-4000-8000-000000000009 ;;
    *) echo "unknown fixture: $1" >&2; exit 2 ;;
  esac
}

# prepare NAME: a fresh working dir and state dir under $ROOT/NAME; sets DIR WORK STATE ID.
prepare() {
  NAME=$1
  ID=$(session_id "$NAME")
  DIR=$ROOT/$NAME
  rm -rf "$DIR"
  mkdir -p "$DIR/work" "$DIR/state"
  cp -a "fixtures/$NAME/workdir/." "$DIR/work/"
  WORK=$DIR/work
  STATE=$DIR/state
  JOURNAL=$STATE/$ID/events.jsonl
}

# server_start: serves fixtures/NAME/model-script.json (with @CWD@ replaced); sets URL.
server_start() {
  sed "s|@CWD@|$WORK|g" "fixtures/$NAME/model-script.json" > "$DIR/model-script.json"
  "$MODEL" --script "$DIR/model-script.json" > "$DIR/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 200); do
    grep -q '^listening on ' "$DIR/server.log" && break
    sleep 0.05
  done
  URL=$(sed -n 's/^listening on //p' "$DIR/server.log")
  [ -n "$URL" ] || { echo "the scripted model did not start: $(cat "$DIR/server.log")" >&2; exit 1; }
}

server_stop() {
  if [ -n "${SERVER_PID:-}" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}
trap server_stop EXIT

# ts ARGS...: turnstile against the scripted model, in the fixture's working dir.
ts() {
  local cmd=$1
  shift
  "$BIN" --state-dir "$STATE" "$cmd" "$@" --model gpt-4.1 --base-url "$URL" --cwd "$WORK"
}

# ts_background ARGS...: the same, in the background; sets PID to turnstile's own pid.
ts_background() {
  local cmd=$1
  shift
  "$BIN" --state-dir "$STATE" "$cmd" "$@" --model gpt-4.1 --base-url "$URL" --cwd "$WORK" \
    > "$DIR/run.log" 2>&1 &
  PID=$!
}

# wait_for TYPE: until the journal has an event of that type.
wait_for() {
  for _ in $(seq 1 400); do
    if [ -f "$JOURNAL" ] && grep -q "\"type\":\"$1\"" "$JOURNAL"; then return 0; fi
    sleep 0.05
  done
  echo "timed out waiting for $1 in $JOURNAL" >&2
  exit 1
}

# children PID: the ids of PID's child processes (the tools it runs, each in its own group).
children() {
  local stat
  for stat in /proc/[0-9]*/stat; do
    read -r -a fields < "$stat" 2>/dev/null || continue
    [ "${fields[3]:-}" = "$1" ] && echo "${fields[0]}"
  done
  return 0
}

# finish: the journal becomes the fixture's recording.
finish() {
  cp "$JOURNAL" "fixtures/$NAME/events.jsonl"
  chmod 0644 "fixtures/$NAME/events.jsonl"
  "$BIN" fsck "fixtures/$NAME/events.jsonl" > /dev/null
  echo "recorded fixtures/$NAME/events.jsonl ($(wc -l < "$JOURNAL") events)"
}

record_multi_turn() {
  say "multi-turn: two prompts (run, then resume), several tools per turn"
  server_start
  ts run "Which items are out of stock? Then fix the TODO in src/report.sh and run it." \
    --session-id "$ID" --allow-all-tools
  ts resume "$ID" "Write the restock list to RESTOCK.md and show it." --allow-all-tools < /dev/null
  server_stop
}

record_autopilot() {
  say "autopilot: the model stops without task_complete, is nudged, then completes the task"
  server_start
  ts run "Count the TODO lines in notes.md." --session-id "$ID" --autopilot --allow-all-tools
  server_stop
}

record_crash_resume() {
  say "crash-resume: kill -9 while a tool runs, then resume with another prompt"
  server_start
  ts_background run "Run the build." --session-id "$ID" --allow-all-tools
  local pid=$PID
  wait_for tool.execution_start
  sleep 0.3
  local kids
  kids=$(children "$pid")
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  for kid in $kids; do kill -9 -- "-$kid" 2>/dev/null || true; done
  ts resume "$ID" "The build was interrupted. Check what happened and run the quick build." \
    --allow-all-tools < /dev/null
  server_stop
}

record_model_error() {
  say "model-error: the model server refuses the second call (HTTP 400), then a retry works"
  server_start
  ts run "Summarise inventory.csv." --session-id "$ID" --allow-all-tools || true
  ts resume "$ID" "Try again, briefly." --allow-all-tools < /dev/null
  server_stop
}

record_abort() {
  say "abort: Ctrl-C while the test suite runs, then another prompt"
  server_start
  ts_background run "Run the test suite." --session-id "$ID" --allow-all-tools
  local pid=$PID
  wait_for tool.execution_start
  sleep 0.3
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  grep -q '"type":"abort"' "$JOURNAL" || { echo "no abort recorded: $(cat "$DIR/run.log")" >&2; exit 1; }
  ts resume "$ID" "Skip the tests for now; which test files are there?" --allow-all-tools < /dev/null
  server_stop
}

record_permission_denied() {
  say "permission-denied: ls allowed by a rule, rm denied by a rule, a write with no rule"
  server_start
  ts run "Clean up the build directory." --session-id "$ID" \
    --allow-tool 'shell(ls)' --deny-tool 'shell(rm)'
  server_stop
}

record_hook_rewrite() {
  say "hook-rewrite: a preToolUse hook points view at secrets.example.env instead of secrets.env"
  server_start
  ts run "Show me the API settings in secrets.env." --session-id "$ID" --allow-all-tools --trust-hooks
  server_stop
}

record_subagents() {
  say "subagents: explore and background agents, async shells, sql in one prompt"
  server_start
  ts run "Survey the project with helpers, run a ticker in the background and keep a tally." \
    --session-id "$ID" --allow-all-tools
  server_stop
}

# The long session's answers are generated (a scripted server would keep thousands of ever
# longer requests in memory), then run by turnstile with the replay provider and real tools.
record_long_session() {
  local turns=1000
  say "long-session: 2 prompts x $turns tool turns, answers generated"
  local answers=$DIR/answers.jsonl n=0 prev=null
  emit() {
    n=$((n + 1))
    local id
    id=$(printf '00000000-0000-4000-8000-%012d' "$n")
    printf '{"type":"%s","data":%s,"id":"%s","timestamp":"2026-01-01T00:00:00.000Z","parentId":%s}\n' \
      "$1" "$2" "$id" "$prev"
    prev="\"$id\""
  }
  {
    emit session.start '{"sessionId":"00000000-0000-4000-8000-000000000000","version":1,"producer":"record-fixtures.sh","copilotVersion":"0","startTime":"2026-01-01T00:00:00.000Z","selectedModel":"gpt-4.1"}'
    local prompt call=0 k args name
    for prompt in 1 2; do
      emit user.message "{\"content\":\"Read data.txt line by line (part $prompt).\"}"
      for i in $(seq 1 "$turns"); do
        call=$((call + 1))
        k=$(((call - 1) % 40 + 1))
        case $((call % 4)) in
          0) name=glob args='{"pattern":"*.txt"}' ;;
          1) name=grep args="{\"pattern\":\"record $(printf '%02d' "$k")\",\"output_mode\":\"count\"}" ;;
          *) name=view args="{\"path\":\"data.txt\",\"view_range\":[$k,$k]}" ;;
        esac
        emit assistant.message "{\"messageId\":\"m$call\",\"content\":\"\",\"toolRequests\":[{\"toolCallId\":\"call_ls_$call\",\"name\":\"$name\",\"arguments\":$args}]}"
      done
      emit assistant.message "{\"messageId\":\"t$prompt\",\"content\":\"Read $turns lines of data.txt in part $prompt.\"}"
    done
  } > "$answers"
  "$BIN" --state-dir "$STATE" run "Read data.txt line by line (part 1)." --session-id "$ID" \
    --provider replay --fixture "$answers" --cwd "$WORK" --model gpt-4.1 > "$DIR/run.log" 2>&1
  "$BIN" --state-dir "$STATE" resume "$ID" "Read data.txt line by line (part 2)." \
    --provider replay --fixture "$answers" --cwd "$WORK" --model gpt-4.1 > "$DIR/resume.log" 2>&1 < /dev/null
}

for name in "${NAMES[@]}"; do
  prepare "$name"
  "record_${name//-/_}"
  finish
done
say "done: check them with 'cargo test -p turnstile --test integration -- replay_check::'"
