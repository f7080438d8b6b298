#!/usr/bin/env bash
# `make bench-otel-live`: turns per second of `turnstile run` against the scripted model on
# 127.0.0.1 (TURNS tool-call turns of `view alpha.txt`, then an answer), without live traces
# and with them (`OTEL_EXPORTER_OTLP_ENDPOINT` naming a loopback receiver that reads each
# request whole and answers 200, a Python `http.server` started here and stopped on every
# way out); REPS runs each, in turn, the median. The receiver's request count shows the
# spans went out.
#
#   scripts/bench-otel-live.sh                                   # profiling-profile binaries
#   TURNSTILE_BIN=target/debug/turnstile MODEL_BIN=target/debug/scripted-model scripts/bench-otel-live.sh
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=${CARGO_TARGET_DIR:-target}
BIN=${TURNSTILE_BIN:-$TARGET/profiling/turnstile}
MODEL=${MODEL_BIN:-$TARGET/profiling/scripted-model}
REPS=${REPS:-5}
TURNS=${TURNS:-200}
[ -x "$BIN" ] || cargo build --profile profiling -p turnstile
[ -x "$MODEL" ] || cargo build --profile profiling -p turnstile-scripted-model

WORK=$(mktemp -d)
RECEIVER=
MODEL_PID=
cleanup() {
    [ -n "$RECEIVER" ] && kill "$RECEIVER" 2>/dev/null || true
    [ -n "$MODEL_PID" ] && kill "$MODEL_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
echo alpha > "$WORK/alpha.txt"
python3 - "$TURNS" > "$WORK/script.json" <<'PY'
import json, sys
turns = int(sys.argv[1])
responses = [{"content": "", "toolCalls": [{"name": "view", "arguments": {"path": "alpha.txt"}}]}
             for _ in range(turns)]
responses.append({"content": "done"})
print(json.dumps({"model": "bench", "responses": responses}))
PY

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
PORT=$(free_port)
python3 - "$PORT" "$WORK/requests" <<'PY' &
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
log = sys.argv[2]
class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(log, "a") as f:
            f.write("1\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver).serve_forever()
PY
RECEIVER=$!
for _ in $(seq 1 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$PORT),1)" 2>/dev/null && break
    sleep 0.1
done

# One run: a fresh scripted model (a script serves once), `turnstile run` timed to its exit.
one_run() {
    local endpoint=$1
    "$MODEL" --script "$WORK/script.json" > "$WORK/model.out" &
    MODEL_PID=$!
    for _ in $(seq 1 100); do
        grep -q listening "$WORK/model.out" 2>/dev/null && break
        sleep 0.05
    done
    local url
    url=$(sed -n 's/^listening on //p' "$WORK/model.out")
    local start end
    start=$(date +%s.%N)
    local vars=(env -u OTEL_EXPORTER_OTLP_TRACES_ENDPOINT -u OTEL_EXPORTER_OTLP_ENDPOINT)
    [ -n "$endpoint" ] && vars+=("OTEL_EXPORTER_OTLP_ENDPOINT=$endpoint")
    "${vars[@]}" /usr/bin/time -o "$WORK/cpu" -f '%U %S' "$BIN" --state-dir "$WORK/state" run \
        --allow-all-tools --model bench --base-url "$url" \
        --cwd "$WORK" "read alpha.txt again and again" > /dev/null 2>&1
    end=$(date +%s.%N)
    kill "$MODEL_PID" 2>/dev/null || true
    wait "$MODEL_PID" 2>/dev/null || true
    MODEL_PID=
    # turns/s (wall) and the process's CPU ms a turn (user + system)
    python3 -c "u, s = open('$WORK/cpu').read().split()[-2:]; print('%.1f %.2f' % (($TURNS + 1) / ($end - $start), (float(u) + float(s)) * 1000 / ($TURNS + 1)))"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
column() { printf '%s\n' "${@:2}" | awk -v c="$1" '{print $c}' | median; }
one_run "" > /dev/null # warm the page cache and the binaries
without=(); with=()
for _ in $(seq 1 "$REPS"); do
    without+=("$(one_run "")")
    with+=("$(one_run "http://127.0.0.1:$PORT")")
done
requests=$(wc -l < "$WORK/requests" 2>/dev/null || echo 0)
echo "| turnstile run, $((TURNS + 1)) turns, scripted model on 127.0.0.1 | median turns/s | median CPU ms a turn | runs |"
echo "|---|---|---|---|"
echo "| without live traces | $(column 1 "${without[@]}") | $(column 2 "${without[@]}") | $REPS |"
echo "| with live traces (loopback receiver; $requests requests received in all) | $(column 1 "${with[@]}") | $(column 2 "${with[@]}") | $REPS |"
