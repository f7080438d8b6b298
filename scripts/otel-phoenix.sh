#!/usr/bin/env bash
# `make otel-phoenix`: `turnstile export --otlp` against a real backend. Installs Arize Phoenix
# (`arize-phoenix` from PyPI) into a virtual environment under the target directory, starts it
# on free loopback ports with a scratch working directory, exports the 2,002-turn fixture and
# the real Copilot runtime's sub-agent recording to its OTLP/HTTP endpoint, and reads the spans
# back through Phoenix's REST API (`GET /v1/projects/default/spans`), checking their count,
# names and parents against what the export sent. Phoenix is stopped on every way out.
#
#   scripts/otel-phoenix.sh                      # the debug binary, built if missing
#   TURNSTILE_BIN=target/release/turnstile scripts/otel-phoenix.sh
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=${CARGO_TARGET_DIR:-target}
BIN=${TURNSTILE_BIN:-$TARGET/debug/turnstile}
VENV=${PHOENIX_VENV:-$TARGET/phoenix-venv}
[ -x "$BIN" ] || cargo build -p turnstile
if [ ! -x "$VENV/bin/phoenix" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q arize-phoenix
fi

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
PORT=$(free_port)
GRPC_PORT=$(free_port)
WORK=$(mktemp -d)
LOG="$WORK/phoenix.log"
PHOENIX_PID=
stop() {
    if [ -n "$PHOENIX_PID" ]; then
        kill "$PHOENIX_PID" 2>/dev/null || true
        wait "$PHOENIX_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap stop EXIT

PHOENIX_HOST=127.0.0.1 PHOENIX_PORT=$PORT PHOENIX_GRPC_PORT=$GRPC_PORT \
    PHOENIX_WORKING_DIR="$WORK" PHOENIX_TELEMETRY_ENABLED=false \
    "$VENV/bin/phoenix" serve >"$LOG" 2>&1 &
PHOENIX_PID=$!
URL="http://127.0.0.1:$PORT"
for _ in $(seq 1 600); do  # 5 min: its first start migrates a new database
    if curl -fsS "$URL/healthz" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$PHOENIX_PID" 2>/dev/null; then tail -20 "$LOG"; echo "phoenix exited" >&2; exit 1; fi
    sleep 0.5
done
curl -fsS "$URL/healthz" >/dev/null || { tail -20 "$LOG"; echo "phoenix did not start" >&2; exit 1; }
echo "phoenix $("$VENV/bin/pip" show arize-phoenix | sed -n 's/^Version: //p') on $URL"

for journal in fixtures/long-session/events.jsonl fixtures/copilot-runtime/s1-subagents.events.jsonl; do
    start=$(date +%s.%N)
    "$BIN" export --otlp "$URL" "$journal"
    end=$(date +%s.%N)
    printf '  %s exported in %.2f s\n' "$journal" "$(echo "$end - $start" | bc)"
done

# Phoenix writes what it receives in the background: ask until the count stops growing.
python3 - "$URL" <<'EOF'
import json, sys, time, urllib.request
url = sys.argv[1]
def spans():
    out, cursor = [], None
    while True:
        q = f"{url}/v1/projects/default/spans?limit=1000" + (f"&cursor={cursor}" if cursor else "")
        with urllib.request.urlopen(q, timeout=30) as r:
            page = json.load(r)
        out.extend(page["data"])
        cursor = page.get("next_cursor")
        if not cursor:
            return out
expected = 2002 + 2000 + 2 + 16  # long-session: chats, tools, interactions; s1-subagents: 16
got, same = [], 0
for _ in range(100):  # up to about 8 minutes on a loaded machine
    count = len(got)
    got = spans()
    if len(got) >= expected:
        break
    same = same + 1 if len(got) == count else 0
    if same == 6:  # 30 s without a new span: it holds all it will
        break
    time.sleep(5)
names = {}
for s in got:
    key = s["name"].split(" ")[0]
    names[key] = names.get(key, 0) + 1
ids = {s["context"]["span_id"] for s in got}
orphans = [s["name"] for s in got if s.get("parent_id") and s["parent_id"] not in ids]
tokens = sum(int(s["attributes"].get("gen_ai.usage.output_tokens", 0)) for s in got
             if s["name"].startswith("chat"))
print(f"  phoenix holds {len(got)} spans (expected {expected}): {json.dumps(names, sort_keys=True)}")
print(f"  spans whose parent phoenix does not hold: {len(orphans)}; output tokens on chat spans: {tokens}")
sub = [s for s in got if s["name"] == "invoke_agent explore"]
if sub:
    parent = next(s for s in got if s["context"]["span_id"] == sub[0]["parent_id"])
    print(f"  'invoke_agent explore' is a child of '{parent['name']}'")
if len(got) != expected or orphans:
    sys.exit("phoenix does not hold what was exported")
EOF
