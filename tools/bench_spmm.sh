#!/bin/sh
# The SpMM kernel benchmark for a CUDA host (the H100 numbers in
# docs/perf.md), from the repository root with the bundle from `make bundle`:
#     OUT=/tmp/spmm tools/bench_spmm.sh
# Phases (PHASES, default all; about 3 minutes on an H100, the 25 s generation
# of the products-sized graph included):
#   main      every graph in $DATA plus generated power-law graphs at arxiv
#             and products size; every kernel at F = 16..256 -> spmm.jsonl
#   flush     ogbn-arxiv again with L2 flushed before each run -> spmm_flush.jsonl
#   tiles     rowsplit's feature tile on every graph at F = 128..512 -> spmm_tile.jsonl
#   sweep     the tuning knobs on ogbn-arxiv and chunglu:arxiv -> spmm_sweep.jsonl
# Tables go to stdout and $OUT/<phase>.log; JSON lines as above in $OUT.
# Exit status 0 only when every run succeeded and every result validated.
set -u

OUT=${OUT:?set OUT to a directory for the results}
BUNDLE=${BUNDLE:-build/bundle}
DATA=${DATA:-../shared/data}
PHASES=${PHASES:-"main flush tiles sweep"}
FEATS=${FEATS:-16,32,64,128,256}
CACHE=${CACHE:-${TMPDIR:-/tmp}/gcnbench-cache}

run="$BUNDLE/run"
if [ ! -x "$run" ] || [ ! -x "$BUNDLE/gcnbench" ]; then
    echo "bench_spmm: no bundle in $BUNDLE (run 'make bundle' first)" >&2
    exit 2
fi
mkdir -p "$OUT"
status=0

. "$(dirname "$0")/bench_graphs.sh"

# gcnbench with the bundle's libraries; logs the table, fails the script on error.
bench() {
    log=$1
    shift
    echo "== gcnbench spmm $*" | tee -a "$OUT/$log.log"
    if ! "$run" gcnbench spmm --root "$DATA" --cache-dir "$CACHE" "$@" 2>&1 |
        tee -a "$OUT/$log.log"; then
        status=1
    fi
    if grep -q INVALID "$OUT/$log.log"; then
        status=1
    fi
}

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
        --format=csv,noheader 2>&1
    date -u
} > "$OUT/host.txt"

for phase in $PHASES; do
    case $phase in
    main)
        # shellcheck disable=SC2046
        bench main $(real_graphs) --dataset chunglu:arxiv --feat "$FEATS" \
            --out "$OUT/spmm.jsonl"
        bench main --dataset chunglu:products --feat "$FEATS" --case-seconds 1 --warmup 2 \
            --out "$OUT/spmm.jsonl"
        ;;
    flush)
        bench flush --dataset ogbn-arxiv --feat "$FEATS" --flush --out "$OUT/spmm_flush.jsonl"
        ;;
    tiles)
        # shellcheck disable=SC2046
        bench tiles $(real_graphs) --dataset chunglu:arxiv --feat 128,256,512 \
            --kernels cusparse,rowsplit --sweep GCN_ROWSPLIT_TILE=default,64,128,256,512 \
            --case-seconds 0.5 --out "$OUT/spmm_tile.jsonl"
        ;;
    sweep)
        for knob in GCN_ROWSPLIT_TILE=default,32,64,128,512 \
            GCN_ROWSPLIT_SORT=0,1024,4096,16384,100000000 \
            GCN_ROWSPLIT_CHUNK=32,64,128,256,512 \
            GCN_ROWSPLIT_MINBLOCKS=default,3,4; do
            bench sweep --dataset ogbn-arxiv --dataset chunglu:arxiv --feat "$FEATS" \
                --kernels rowsplit --sweep "$knob" --case-seconds 0.5 \
                --out "$OUT/spmm_sweep.jsonl"
        done
        bench sweep --dataset ogbn-arxiv --dataset chunglu:arxiv --feat "$FEATS" \
            --kernels mergepath --sweep GCN_MERGEPATH_COST=default,10,20,35,50,100,200 \
            --case-seconds 0.5 --out "$OUT/spmm_sweep.jsonl"
        for knob in GCN_ACCEL_VEC=1,4 GCN_ACCEL_TILE=default,64,256,100000; do
            bench sweep --dataset ogbn-arxiv --dataset chunglu:arxiv --feat "$FEATS" \
                --kernels accel --sweep "$knob" --case-seconds 0.5 \
                --out "$OUT/spmm_sweep.jsonl"
        done
        ;;
    *)
        echo "bench_spmm: unknown phase '$phase'" >&2
        status=2
        ;;
    esac
done

echo "bench_spmm: $( [ $status -eq 0 ] && echo ok || echo FAILED ) (results in $OUT)"
exit $status
