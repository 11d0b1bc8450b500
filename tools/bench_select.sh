#!/bin/sh
# The AdaptGear selector benchmark for a CUDA host (docs/perf.md), from the
# repository root with the bundle from `make bundle`:
#     OUT=/tmp/select tools/bench_select.sh
# Every graph in $DATA and the generated power-law graphs (GRAPHS adds or
# replaces them: GRAPHS="--dataset chunglu:products"), METIS-reordered
# (REORDER, default metis: communities of 16, 256 and 4096 nodes), at
# F = 16..256: the selector run as training runs it until it locks, every
# candidate timed (the oracle), cuSPARSE and rowsplit on the original order.
# Table on stdout and $OUT/select.log, JSON lines in $OUT/select.jsonl; exit
# status 0 only when every run succeeded and every candidate validated.
set -u

OUT=${OUT:?set OUT to a directory for the results}
BUNDLE=${BUNDLE:-build/bundle}
DATA=${DATA:-../shared/data}
FEATS=${FEATS:-16,32,64,128,256}
REORDER=${REORDER:-metis}
CACHE=${CACHE:-${TMPDIR:-/tmp}/gcnbench-cache}

run="$BUNDLE/run"
if [ ! -x "$run" ] || [ ! -x "$BUNDLE/gcnbench" ]; then
    echo "bench_select: no bundle in $BUNDLE (run 'make bundle' first)" >&2
    exit 2
fi
. "$(dirname "$0")/bench_graphs.sh"
mkdir -p "$OUT"
# shellcheck disable=SC2046
GRAPHS=${GRAPHS:-"$(real_graphs) --dataset chunglu:arxiv"}
status=0
# shellcheck disable=SC2086
"$run" gcnbench select --root "$DATA" --cache-dir "$CACHE" --reorder "$REORDER" \
    --feat "$FEATS" $GRAPHS --out "$OUT/select.jsonl" 2>&1 | tee "$OUT/select.log" || status=1
grep -q 'BAD$' "$OUT/select.log" && status=1
grep -q '^[0-9]* cases' "$OUT/select.log" || status=1
echo "bench_select: $( [ $status -eq 0 ] && echo ok || echo FAILED ) (results in $OUT)"
exit $status
