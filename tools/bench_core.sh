#!/bin/sh
# Our cuBLAS matmul and cuSPARSE SpMM against PyTorch on the same GPU in one
# run (the CUDA-backend numbers in docs/perf.md), from the repository root
# with the bundle from `make bundle` and PyTorch installed:
#     OUT=/tmp/core DATA=/path/to/data tools/bench_core.sh
# Steps: `gcnbench matmul` (the two ogbn-arxiv layer shapes, FP32 and TF32);
# `gcnbench spmm` with the cusparse kernel on ogbn-arxiv ($DATA/ogbn_arxiv),
# exporting the exact matrix it times; tools/compare/torch_spmm.py on that
# matrix (torch.sparse.mm per F, torch.matmul per shape and precision), which
# ends with the side-by-side table.  Tables go to stdout and $OUT/*.log, JSON
# lines to $OUT/gcn.jsonl and $OUT/torch.jsonl.  Exit status 0 only when
# every step succeeded and every result validated.
set -u

OUT=${OUT:?set OUT to a directory for the results}
BUNDLE=${BUNDLE:-build/bundle}
DATA=${DATA:-../shared/data}
FEATS=${FEATS:-16,32,64,128,256}
REPS=${REPS:-100}
CACHE=${CACHE:-${TMPDIR:-/tmp}/gcnbench-cache}
PYTHON=${PYTHON:-python3}

run="$BUNDLE/run"
if [ ! -x "$run" ] || [ ! -x "$BUNDLE/gcnbench" ]; then
    echo "bench_core: no bundle in $BUNDLE (run 'make bundle' first)" >&2
    exit 2
fi
if [ ! -e "$DATA/ogbn_arxiv" ]; then
    echo "bench_core: no ogbn-arxiv in $DATA/ogbn_arxiv (set DATA)" >&2
    exit 2
fi
mkdir -p "$OUT"
rm -rf "$OUT/gcn.jsonl" "$OUT/torch.jsonl" "$OUT/matrix"
status=0

# Runs a command, logs its output to $OUT/$1.log, fails the script on a
# non-zero exit or an INVALID result.
step() {
    log=$1
    shift
    echo "== $*" | tee "$OUT/$log.log"
    { "$@" 2>&1; echo $? > "$OUT/$log.rc"; } | tee -a "$OUT/$log.log"
    if [ "$(cat "$OUT/$log.rc")" != 0 ] || grep -q INVALID "$OUT/$log.log"; then
        status=1
    fi
    rm -f "$OUT/$log.rc"
}

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
        --format=csv,noheader 2>&1
    "$PYTHON" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1
    date -u
} > "$OUT/host.txt"

step matmul "$run" gcnbench matmul --reps "$REPS" --out "$OUT/gcn.jsonl"
step spmm "$run" gcnbench spmm --root "$DATA" --cache-dir "$CACHE" --dataset ogbn-arxiv \
    --kernels cusparse --feat "$FEATS" --reps "$REPS" --export-matrix "$OUT/matrix" \
    --out "$OUT/gcn.jsonl"
if [ -e "$OUT/matrix/ogbn-arxiv/values.npy" ]; then
    step torch "$PYTHON" tools/compare/torch_spmm.py "$OUT/matrix/ogbn-arxiv" --feat "$FEATS" \
        --reps "$REPS" --out "$OUT/torch.jsonl" --ours "$OUT/gcn.jsonl"
else
    echo "bench_core: gcnbench spmm wrote no matrix; torch.sparse.mm not run" >&2
    status=1
fi

echo "bench_core: $( [ $status -eq 0 ] && echo ok || echo FAILED ) (results in $OUT)"
exit $status
