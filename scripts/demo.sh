#!/usr/bin/env bash
# `make demo`: what turnstile does with a recorded session, offline, in a throwaway state dir.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${TURNSTILE_BIN:-target/release/turnstile}
STATE=$(mktemp -d "${TMPDIR:-/tmp}/turnstile-demo.XXXXXX")
trap 'rm -rf "$STATE"' EXIT
ID=4411488c-e7b6-4328-b266-cdf491e0f73c

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "A session recorded by the real GitHub Copilot runtime (prompt, 3 LLM calls, resume, 3 more) goes into a fresh state directory"
mkdir -p "$STATE/$ID"
cp fixtures/copilot-runtime/r1-resumed.events.jsonl "$STATE/$ID/events.jsonl"
run "$BIN" --state-dir "$STATE" sessions

say "Its LLM calls and tool calls, read from the journal (an id prefix is enough)"
run "$BIN" --state-dir "$STATE" events 4411 --type user.message --type assistant.turn_start --type tool.execution_start

say "fsck checks every line"
run "$BIN" --state-dir "$STATE" fsck 4411

say "A crash tears the last write: half a line is left at the end of the journal"
printf '{"type":"assistant.turn_start","data":{"turnId":"3"' >> "$STATE/$ID/events.jsonl"
run "$BIN" --state-dir "$STATE" fsck 4411 || echo "(exit $? : damaged)"

say "repair moves the torn bytes to a side file and cuts the journal back to its last whole line"
run "$BIN" --state-dir "$STATE" repair 4411
run "$BIN" --state-dir "$STATE" fsck 4411
ls "$STATE/$ID"

if "$BIN" audit --help >/dev/null 2>&1; then
  say "audit: exactly how many LLM calls, tool calls and errors, and whether the journal's invariants hold"
  run "$BIN" --state-dir "$STATE" audit 4411
fi
say "done: the state directory $STATE is removed on exit"
