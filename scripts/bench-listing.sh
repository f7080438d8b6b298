#!/usr/bin/env bash
# `turnstile sessions` over many generated stored sessions, the file store (index warm) next
# to JetStream R1 (the session index bucket): one table row per store and count.
#
#   scripts/bench-listing.sh                       # 100 000 and 1 000 000 sessions, 5 repetitions
#   COUNTS="20000" REPS=3 scripts/bench-listing.sh
#
# The file store's sessions are written by `gen_sessions` (journals and nothing else; the first,
# untimed listing writes the index), JetStream's index entries by `sessions_bench` straight
# into the bucket on its own `nats-server`. Everything generated lives under target/bench and is
# deleted after each count (1 000 000 sessions take about 3 GB on files).
set -euo pipefail

cd "$(dirname "$0")/.."
COUNTS=${COUNTS:-"100000 1000000"}
TARGET=${CARGO_TARGET_DIR:-target}
TURNSTILE=${TURNSTILE:-$TARGET/profiling/turnstile}
BENCH=target/bench
mkdir -p "$BENCH"
cargo build --profile profiling -q -p turnstile-journal --example gen_sessions
cargo build --profile profiling -q -p turnstile-store-nats --example sessions_bench

ROOT=
trap '[ -n "$ROOT" ] && rm -rf "$ROOT"' EXIT
echo "| store | sessions | wall s | CPU s, turnstile | CPU s, nats-server |"
echo "|---|---:|---:|---:|---:|"
for COUNT in $COUNTS; do
    ROOT=$BENCH/listing-files-$COUNT
    rm -rf "$ROOT"
    started=$(date +%s)
    "$TARGET/profiling/examples/gen_sessions" "$ROOT" "$COUNT"
    echo "generated $COUNT file-store sessions in $(( $(date +%s) - started )) s" >&2
    BENCH_DIR=$BENCH "$TARGET/profiling/examples/sessions_bench" "$TURNSTILE" "$COUNT" "$ROOT"
    rm -rf "$ROOT"
done
