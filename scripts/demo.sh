#!/usr/bin/env bash
# `make demo`: turnstile's main job on embedded defaults, offline, with no model server:
# replay a recorded multi-turn session with real tools, audit the journal it wrote, resume it
# with the recording's next prompt, check the recording as a test, and recover a torn write.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${TURNSTILE_BIN:-target/release/turnstile}
FIXTURE=fixtures/multi-turn
TMP=$(mktemp -d "${TMPDIR:-/tmp}/turnstile-demo.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
STATE=$TMP/session-state
WORK=$TMP/work
ID=de30de30-0000-4000-8000-000000000001
START=$SECONDS

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "1. $FIXTURE is a session recorded by turnstile: its journal (events.jsonl) and the files it worked on (workdir/). They go into a fresh working dir:"
mkdir -p "$WORK"
cp -R "$FIXTURE/workdir/." "$WORK/"
run ls -R "$WORK"

say "2. Replay the session's first prompt. The real agent loop runs and the tools really run in the working dir; the model's answers come from the recording, so no network and no model server are needed. The answer streams below:"
run "$BIN" --state-dir "$STATE" replay "$FIXTURE" --prompts 1 --session-id "$ID" --cwd "$WORK"

say "The edit was real: src/report.sh in the working dir now prints only the items out of stock:"
run cat "$WORK/src/report.sh"

say "3. turnstile audit reads the journal the replay just wrote: exactly how many LLM calls, tool calls and errors, and whether the journal's invariants hold:"
run "$BIN" --state-dir "$STATE" audit "$ID"

say "4. Resume the session with the recording's next prompt; the answers again come from the recording, from where the conversation stands:"
run "$BIN" --state-dir "$STATE" resume "$ID" "Write the restock list to RESTOCK.md and show it." \
  --provider replay --fixture "$FIXTURE/events.jsonl" --cwd "$WORK" --allow-all-tools
run "$BIN" --state-dir "$STATE" audit "$ID" --count assistant.turn_start

say "5. A recording is a test: replay --check re-runs the whole session in a temporary copy of workdir/ and compares the new journal with the recording (ids, timestamps and durations aside):"
run "$BIN" replay "$FIXTURE" --check 2>/dev/null

say "Change a file the recorded agent read, and the check fails, naming the event, the field and the turn:"
mkdir -p "$TMP/changed"
cp -R "$FIXTURE/workdir/." "$TMP/changed/"
printf 'item,count\napples,3\npears,2\nplums,0\n' > "$TMP/changed/inventory.csv"
run "$BIN" --state-dir "$TMP/check-state" replay "$FIXTURE" --check --cwd "$TMP/changed" 2>/dev/null \
  || echo "(exit $?: the agent's run no longer matches its recording)"

say "6. Crash safety: fsck checks every line of the demo session's journal"
run "$BIN" --state-dir "$STATE" fsck "$ID"

say "A crash tears the last write: half a line is left at the end of the journal"
printf '{"type":"assistant.turn_start","data":{"turnId":"3"' >> "$STATE/$ID/events.jsonl"
run "$BIN" --state-dir "$STATE" fsck "$ID" || echo "(exit $?: damaged)"

say "repair moves the torn bytes to a side file and cuts the journal back to its last whole line"
run "$BIN" --state-dir "$STATE" repair "$ID"
run "$BIN" --state-dir "$STATE" fsck "$ID"

say "done in $((SECONDS - START))s; the demo's files ($TMP) are removed on exit"
