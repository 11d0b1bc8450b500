#!/bin/sh
# Test accuracy on ogbn-arxiv over many seeds, gcn beside PyTorch Geometric,
# for the one-point agreement check in docs/perf.md, from the repository
# root with the bundle from `make bundle`:
#     OUT=/tmp/seeds CONFIG=models/gin.json RUNS=20 JOBS=4 tools/compare/seeds_arxiv.sh
# Accuracy only: each framework trains its RUNS seeds (SEED, SEED + 1, ...;
# default 0) in JOBS processes (default 4) and all of them share the GPU at
# once, so epoch times mean nothing here; tools/compare/run_arxiv.sh measures
# those, one process at a time.  PYG_RUNS (default RUNS) sets PyG's count
# apart, and PYG_SEED (default SEED) its first seed.  Both frameworks train on
# the same exported data (--features random:128; the features depend on the
# data seed, not on the training seeds).  Prints every run's test accuracy at
# its best-validation epoch, the means and standard deviations, their
# difference and Welch's t; exit status 0 only when every process succeeded
# and the means agree within TOLERANCE (default 0.01).
set -u

CONFIG=${CONFIG:-models/gin.json}
TOLERANCE=${TOLERANCE:-0.01}
RUNS=${RUNS:-20}
SEED=${SEED:-0}
PYG_RUNS=${PYG_RUNS:-$RUNS}
PYG_SEED=${PYG_SEED:-$SEED}
JOBS=${JOBS:-4}
EXPORT=${EXPORT:-${TMPDIR:-/tmp}/gcn-arxiv-export}

script=seeds_arxiv
. "$(dirname "$0")/env.sh"
name=$(basename "$CONFIG" .json)
mkdir -p "$OUT" "$EXPORT"

# The data both sides train on: one epoch of gcntrain writes it.
if ! "$run" gcntrain "$CONFIG" --dataset ogbn-arxiv --root "$DATA" --features random:128 \
    --device cuda --epochs 1 --runs 1 --export-data "$EXPORT/$name" --quiet \
    > "$OUT/$name.export.log" 2>&1; then
    tail -n 5 "$OUT/$name.export.log" >&2
    exit 1
fi

# launch FRAMEWORK RUNS FIRST_SEED: JOBS background processes, each on its
# own stretch of consecutive seeds.
launch() {
    per=$(( ($2 + JOBS - 1) / JOBS ))
    j=0
    while [ $((j * per)) -lt "$2" ]; do
        n=$(( $2 - j * per < per ? $2 - j * per : per ))
        s=$(( $3 + j * per ))
        if [ "$1" = gcn ]; then
            "$run" gcntrain "$CONFIG" --dataset ogbn-arxiv --root "$DATA" --features random:128 \
                --device cuda --runs "$n" --seed "$s" --log "$OUT/$name.gcn.$j.jsonl" --force --quiet \
                > "$OUT/$name.gcn.$j.log" 2>&1 &
            pids="$pids $!"
        else
            "$PYTHON" tools/compare/pyg_train.py "$CONFIG" "$EXPORT/$name" --runs "$n" \
                --seed "$s" > "$OUT/$name.pyg.$j.log" 2>&1 &
            pids="$pids $!"
        fi
        j=$((j + 1))
    done
}

pids=""
launch gcn "$RUNS" "$SEED"
launch pyg "$PYG_RUNS" "$PYG_SEED"
status=0
for pid in $pids; do
    wait "$pid" || status=1
done

"$PYTHON" - "$OUT" "$name" "$TOLERANCE" "$SEED" "$PYG_SEED" > "$OUT/$name.seeds.txt" <<'EOF' || status=1
import glob, json, math, os, statistics, sys

out, name, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
first = {"gcn": int(sys.argv[4]), "pyg": int(sys.argv[5])}

def accuracies(framework):
    """Test accuracies in seed order: process j's runs follow process j - 1's."""
    files = sorted(glob.glob(os.path.join(out, f"{name}.{framework}.*.*")),
                   key=lambda p: int(p.split(".")[-2]))
    acc = []
    for path in files:
        if framework == "gcn" and path.endswith(".jsonl"):
            acc += [json.loads(l)["best_test_acc"] for l in open(path) if '"best_epoch"' in l]
        elif framework == "pyg" and path.endswith(".log"):
            objs = [json.loads(l) for l in open(path) if l.startswith("{")]
            acc += objs[-1]["test_acc"] if objs else []
    return acc

res = {f: accuracies(f) for f in ("gcn", "pyg")}
for f, acc in res.items():
    print(f"{f} seeds {first[f]}..{first[f] + len(acc) - 1}: "
          + " ".join(f"{a:.4f}" for a in acc))
if min(len(a) for a in res.values()) < 2:
    print("too few runs finished to compare")
    sys.exit(1)
m = {f: statistics.mean(a) for f, a in res.items()}
sd = {f: statistics.stdev(a) for f, a in res.items()}
for f in res:
    print(f"{f:3} {m[f]:.4f} +- {sd[f]:.4f} over {len(res[f])} runs")
diff = m["gcn"] - m["pyg"]
se = math.sqrt(sum(sd[f] ** 2 / len(res[f]) for f in res))
agree = abs(diff) <= tol
t = diff / se if se > 0 else float("nan")
print(f"gcn - pyg {diff:+.4f} (standard error {se:.4f}, Welch's t {t:+.2f}): "
      f"accuracy {'agrees' if agree else 'DIFFERS'} (tolerance {tol})")
sys.exit(0 if agree else 1)
EOF
cat "$OUT/$name.seeds.txt"

echo "seeds_arxiv: $( [ $status -eq 0 ] && echo ok || echo FAILED ) (results in $OUT)"
exit $status
