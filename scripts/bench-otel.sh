#!/usr/bin/env bash
# `make bench-otel`: `turnstile export --otlp` of the 2,002-turn fixture (fixtures/long-session,
# 10,014 events, 3.7 MB) to a receiver on a free loopback port that reads each request whole
# and answers 200 (a Python `http.server`, started here and stopped on every way out): wall
# time and the export's peak RSS (`/usr/bin/time`), REPS runs, the median; with and without
# the content opt-in.
#
#   scripts/bench-otel.sh                                   # profiling-profile binary, 5 runs
#   TURNSTILE_BIN=target/debug/turnstile REPS=3 scripts/bench-otel.sh
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=${CARGO_TARGET_DIR:-target}
BIN=${TURNSTILE_BIN:-$TARGET/profiling/turnstile}
REPS=${REPS:-5}
JOURNAL=fixtures/long-session/events.jsonl
[ -x "$BIN" ] || cargo build --profile profiling -p turnstile

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
python3 - "$PORT" <<'EOF' &
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver).serve_forever()
EOF
RECEIVER=$!
trap 'kill $RECEIVER 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$PORT),1)" 2>/dev/null && break
    sleep 0.1
done

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| export --otlp of $JOURNAL | median wall s | median CPU s | median peak RSS MiB | spans | requests |"
echo "|---|---|---|---|---|---|"
for content in false true; do
    times=(); cpu=(); rss=(); line=
    for _ in $(seq 1 "$REPS"); do
        out=$(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=$content \
            /usr/bin/time -f '%e %M %U %S' "$BIN" export --otlp "http://127.0.0.1:$PORT" "$JOURNAL" 2>&1)
        line=$(echo "$out" | grep ' spans in ')
        read -r t m u k < <(echo "$out" | tail -1)
        times+=("$t"); rss+=("$m"); cpu+=("$(echo "$u + $k" | bc)")
    done
    T=$(printf '%s\n' "${times[@]}" | median)
    M=$(printf '%s\n' "${rss[@]}" | median)
    C=$(printf '%s\n' "${cpu[@]}" | median)
    spans=$(echo "$line" | awk '{print $1}')
    requests=$(echo "$line" | awk '{print $4}')
    printf '| contents %s | %s | %s | %.1f | %s | %s |\n' "$content" "$T" "$C" "$(echo "$M / 1024" | bc -l)" "$spans" "$requests"
done
