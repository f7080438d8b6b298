#!/usr/bin/env bash
# `turnstile sessions` over many generated stored sessions, the file store (index warm) next
# to JetStream R1 (the session index bucket): one table row per store and count.
#
#   scripts/bench-listing.sh                       # 100 000 and 1 000 000 sessions, 5 repetitions
#   COUNTS="20000" REPS=3 scripts/bench-listing.sh
#   CARGO_TARGET_DIR=/somewhere PROFILE=release scripts/bench-listing.sh   # that build's binary
#   TURNSTILE=/path/to/turnstile STORES=nats scripts/bench-listing.sh      # one store, any binary
#
# PROFILE (default `profiling`) is the cargo profile the generators are built with and, unless
# TURNSTILE names a binary, the one whose `turnstile` is timed (build it first:
# `cargo build --profile PROFILE -p turnstile`). STORES is `files nats` (default), `files` or
# `nats`.
#
# The file store's sessions are written by `gen_sessions` (journals and nothing else; the first,
# untimed listing writes the index), JetStream's index entries by `sessions_bench` straight
# into the bucket on its own `nats-server`. Everything generated lives under target/bench and is
# deleted after each count (1 000 000 sessions take about 3 GB on files).
set -euo pipefail

cd "$(dirname "$0")/.."
COUNTS=${COUNTS:-"100000 1000000"}
TARGET=${CARGO_TARGET_DIR:-target}
PROFILE=${PROFILE:-profiling}
# Cargo's output directory of the profile (`dev` builds into `debug`).
OUT=$PROFILE
if [ "$PROFILE" = dev ]; then OUT=debug; fi
TURNSTILE=${TURNSTILE:-$TARGET/$OUT/turnstile}
STORES=${STORES:-"files nats"}
BENCH=${BENCH_DIR:-$TARGET/bench}
mkdir -p "$BENCH"
[ -x "$TURNSTILE" ] || { echo "no binary at $TURNSTILE (cargo build --profile $PROFILE -p turnstile)" >&2; exit 2; }
if [[ " $STORES " == *" files "* ]]; then
    cargo build --profile "$PROFILE" -q -p turnstile-journal --example gen_sessions
fi
cargo build --profile "$PROFILE" -q -p turnstile-store-nats --example sessions_bench

ROOT=
trap 'if [ -n "$ROOT" ]; then rm -rf "$ROOT"; fi' EXIT
echo "| store | sessions | first listing (writes the index or the object), wall s | wall s | CPU s, turnstile | CPU s, nats-server |"
echo "|---|---:|---:|---:|---:|---:|"
for COUNT in $COUNTS; do
    ROOT=
    if [[ " $STORES " == *" files "* ]]; then
        ROOT=$BENCH/listing-files-$COUNT
        rm -rf "$ROOT"
        started=$(date +%s)
        "$TARGET/$OUT/examples/gen_sessions" "$ROOT" "$COUNT"
        echo "generated $COUNT file-store sessions in $(( $(date +%s) - started )) s" >&2
    fi
    NATS=1
    [[ " $STORES " == *" nats "* ]] || NATS=0
    BENCH_DIR=$BENCH BENCH_NATS=$NATS "$TARGET/$OUT/examples/sessions_bench" "$TURNSTILE" "$COUNT" $ROOT
    if [ -n "$ROOT" ]; then rm -rf "$ROOT"; fi
done
