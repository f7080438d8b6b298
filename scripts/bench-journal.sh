#!/usr/bin/env bash
# Journal benchmarks: durable appends/s per durability mode (1 and 4 producers) and streaming
# read throughput on a generated 400 MB journal, next to `wc -l` and `grep -c` on that file.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=target/profiling/examples/journal_bench
OUT=target/bench
mkdir -p "$OUT"
SIZE_MB=${SIZE_MB:-400}
FILE=$OUT/journal-${SIZE_MB}mb.jsonl

echo "## durable appends (events of ~300 bytes; turn mode fsyncs every 6 events)"
printf '%-6s %-10s %-8s %-12s %s\n' mode producers events events/s MB/s
for mode in event turn off; do
  for producers in 1 4; do
    case $mode in event) n=2000 ;; turn) n=20000 ;; off) n=400000 ;; esac
    line=$($BENCH append --mode "$mode" --producers "$producers" --events "$n" --dir "$OUT/append")
    python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(f\"{sys.argv[2]:<6} {d['producers']:<10} {d['events']:<8} {d['eventsPerSec']:<12.0f} {d['MBps']:.1f}\")" "$line" "$mode"
  done
done

[ -f "$FILE" ] || $BENCH gen --size-mb "$SIZE_MB" --out "$FILE" >/dev/null
cat "$FILE" > /dev/null # warm the page cache so every reader below sees the same cache state
SIZE=$(stat -c %s "$FILE")
echo
echo "## streaming read of $FILE ($((SIZE / 1048576)) MiB, page cache warm; median of 3)"
median() { sort -n | sed -n 2p; }
# Output goes to a file, not /dev/null: GNU grep stops at the first match when it sees /dev/null.
t() { local s e; s=$(date +%s.%N); "$@" >"$OUT/reader.out"; e=$(date +%s.%N); echo "$e - $s" | bc; }
printf '%-34s %-10s %s\n' reader seconds MB/s
for what in wc grep read; do
  times=()
  for _ in 1 2 3; do
    case $what in
      wc) times+=("$(t wc -l "$FILE")") ;;
      grep) times+=("$(t grep -c tool.execution_complete "$FILE")") ;;
      read) times+=("$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['readSeconds'])" "$($BENCH read "$FILE")")") ;;
    esac
  done
  m=$(printf '%s\n' "${times[@]}" | median)
  name=$what
  case $what in wc) name="wc -l" ;; grep) name="grep -c tool.execution_complete" ;; read) name="JournalReader (parse every event)" ;; esac
  printf '%-34s %-10.3f %.0f\n' "$name" "$m" "$(echo "$SIZE / $m / 1000000" | bc -l)"
done

echo
echo "## the seal: appends at turn durability with no seal, a seal, a signed seal (rounds interleaved, medians)"
$BENCH seal --mode turn --events 20000 --rounds 5 --dir "$OUT/append" | grep '"seal"'
echo "## the seal's own cost: the same with no fsync at all (durability off), what the seal adds to an event"
$BENCH seal --mode off --events 30000 --rounds 7 --dir "$OUT/append" | grep '"seal"'
echo
echo "## verify of $FILE against its seal, next to sha256sum of the same file (median of 3)"
$BENCH seal-file "$FILE"
printf '%-34s %-10s %s\n' check seconds MB/s
for what in sha256sum verify; do
  times=()
  for _ in 1 2 3; do
    case $what in
      sha256sum) times+=("$(t sha256sum "$FILE")") ;;
      verify) times+=("$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['seconds'])" "$($BENCH verify "$FILE")")") ;;
    esac
  done
  m=$(printf '%s\n' "${times[@]}" | median)
  printf '%-34s %-10.3f %.0f\n' "$what" "$m" "$(echo "$SIZE / $m / 1000000" | bc -l)"
done
