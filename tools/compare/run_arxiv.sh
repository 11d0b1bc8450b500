#!/bin/sh
# The ogbn-arxiv comparison with PyTorch Geometric for a CUDA host (the
# numbers in docs/perf.md), from the repository root with the bundle from
# `make bundle` and a Python with PyTorch Geometric:
#     OUT=/tmp/arxiv tools/compare/run_arxiv.sh
# For each configuration (CONFIGS, default models/gcn.json models/gin.json):
# gcntrain on the real graph and split with --features random:128, writing the
# data it used (--export-data) and a JSON-lines log, then
# tools/compare/pyg_train.py on that same data, first on PyG's fast path (a
# sparse CSR adjacency), then with --adjacency edge_index.  Prints one table:
# test accuracy at the best-validation epoch, median epoch time (training step
# plus evaluation, device-synchronised) and peak GPU memory, gcn beside both
# PyG rows (each labelled with its adjacency).  Exit status 0 only when every
# run succeeded and each pair of accuracies, gcn and PyG's fast path, agrees
# within TOLERANCE (default 0.01).  Each side reports the mean of RUNS
# runs (default 3, so one seed's luck does not decide a one-point
# comparison); EPOCHS overrides the configurations' 500.  Logs, JSON lines
# and the table go to $OUT; the exported data (about 125 MB per
# configuration) to $EXPORT (default ${TMPDIR:-/tmp}/gcn-arxiv-export).
set -u

CONFIGS=${CONFIGS:-"models/gcn.json models/gin.json"}
TOLERANCE=${TOLERANCE:-0.01}
EPOCHS=${EPOCHS:-}
RUNS=${RUNS:-3}
EXPORT=${EXPORT:-${TMPDIR:-/tmp}/gcn-arxiv-export}

script=run_arxiv
. "$(dirname "$0")/env.sh"
mkdir -p "$OUT" "$EXPORT"
status=0

host_info > "$OUT/host.txt"

overrides=""
[ -n "$EPOCHS" ] && overrides="$overrides --epochs $EPOCHS"
[ -n "$RUNS" ] && overrides="$overrides --runs $RUNS"

names=""
for cfg in $CONFIGS; do
    name=$(basename "$cfg" .json)
    names="$names $name"
    echo "== $name: gcntrain" >&2
    # shellcheck disable=SC2086
    if ! "$run" gcntrain "$cfg" --dataset ogbn-arxiv --root "$DATA" --features random:128 \
        --device cuda --export-data "$EXPORT/$name" --log "$OUT/$name.gcn.jsonl" --force --quiet \
        $overrides > "$OUT/$name.gcn.log" 2>&1; then
        tail -n 5 "$OUT/$name.gcn.log" >&2
        status=1
        continue
    fi
    for adj in sparse edge_index; do
        log="$OUT/$name.pyg.log"
        [ $adj = sparse ] || log="$OUT/$name.pyg-$adj.log"
        echo "== $name: PyTorch Geometric, $adj" >&2
        # shellcheck disable=SC2086
        if ! "$PYTHON" tools/compare/pyg_train.py "$cfg" "$EXPORT/$name" --adjacency $adj \
            $overrides > "$log" 2>&1; then
            tail -n 5 "$log" >&2
            status=1
        fi
    done
done

# One table from the logs; exits 1 when a pair is missing or disagrees.
# shellcheck disable=SC2086
"$PYTHON" - "$OUT" "$TOLERANCE" $names > "$OUT/table.txt" <<'EOF' || status=1
import json, os, statistics, sys

out, tol, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]

def gcn_result(name):
    path = os.path.join(out, name + ".gcn.jsonl")
    if not os.path.exists(path):
        return None
    epochs, best, summary = {}, [], None
    for line in open(path):
        o = json.loads(line)
        if o.get("summary"):
            summary = o
        elif "best_epoch" in o:
            best.append(o["best_epoch"])
        else:
            epochs.setdefault(o["run"], []).append(o["train_ms"] + o["eval_ms"])
    if summary is None:
        return None
    return {"acc": summary["test_acc_mean"], "std": summary["test_acc_std"], "best": best,
            "ms": statistics.median(statistics.median(t) for t in epochs.values()),
            "peak": summary["peak_bytes"]}

def pyg_result(name, log):
    path = os.path.join(out, name + log)
    if not os.path.exists(path):
        return None
    lines = [l for l in open(path) if l.startswith("{")]
    if not lines:
        return None
    o = json.loads(lines[-1])
    return {"acc": o["test_acc_mean"], "std": o["test_acc_std"], "best": o["best_epoch"],
            "ms": o["median_epoch_ms"], "peak": o["peak_bytes"],
            "label": f"pyg {o['torch_geometric']} {o.get('adjacency', 'edge_index')}"}

ok = True
print(f"{'config':8} {'framework':22} {'test acc':>16} {'best epoch':>11} "
      f"{'median ms':>10} {'peak MiB':>9}")
for name in names:
    rows = [("gcn", gcn_result(name)), ("pyg sparse", pyg_result(name, ".pyg.log")),
            ("pyg edge_index", pyg_result(name, ".pyg-edge_index.log"))]
    for label, r in rows:
        if r is None:
            print(f"{name:8} {label:22} {'(failed)':>16}")
            continue
        acc = f"{r['acc']:.4f} +- {r['std']:.4f}"
        best = ",".join(str(b) for b in r["best"])
        print(f"{name:8} {r.get('label', label):22} {acc:>16} {best:>11} "
              f"{r['ms']:10.2f} {r['peak'] / 2**20:9.1f}")
    g, p = rows[0][1], rows[1][1]
    if g is None or p is None:
        ok = False
        continue
    diff = g["acc"] - p["acc"]
    agree = abs(diff) <= tol
    ok = ok and agree
    print(f"{name:8} {'gcn - pyg sparse':22} {diff:+16.4f} {'':>11} {g['ms'] - p['ms']:+10.2f} "
          f"{(g['peak'] - p['peak']) / 2**20:+9.1f}  accuracy {'agrees' if agree else 'DIFFERS'}"
          f" (tolerance {tol})")
sys.exit(0 if ok else 1)
EOF
cat "$OUT/table.txt"

echo "run_arxiv: $( [ $status -eq 0 ] && echo ok || echo FAILED ) (results in $OUT)"
exit $status
