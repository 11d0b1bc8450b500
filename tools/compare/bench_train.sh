#!/bin/sh
# Training epoch time and GPU memory, gcn beside PyTorch Geometric's fast path
# (a sparse CSR adjacency) and its edge_index path, for a CUDA host, from the
# repository root with the bundle from `make bundle` and a Python with PyTorch
# Geometric:
#     OUT=/tmp/bench tools/compare/bench_train.sh
#     OUT=/tmp/products CONFIGS=my-products.json DATASETS=chunglu:products \
#         FEATURES=random:100 EPOCHS=50 tools/compare/bench_train.sh
# For each configuration in CONFIGS (default models/gcn.json models/gin.json;
# any model JSON) and each dataset in DATASETS (default "ogbn-arxiv cora
# citeseer"; any gcntrain --dataset spec, e.g. chunglu:products): gcntrain
# exports the data once (one epoch, no reordering: the files are in the
# original node order either way), `gcnbench train` times gcn, and
# tools/compare/pyg_train.py --bench times PyG on the exported files with
# --adjacency sparse, then edge_index; all at PRECISION (fp32 or tf32, default
# fp32), each run WARMUP untimed epochs (default 10, gcnbench's) and then
# EPOCHS timed ones (default 200).  A dataset without node features of its
# own gets --features FEATURES (default random:128): the rmat and chunglu
# generators always, any other when gcntrain says it has none (ogbn-arxiv
# without node-feat here); SPEC@F gives dataset SPEC the features F instead.
# The JSON lines (one per run, the schema of `gcnbench train`) go to
# $OUT/bench_train.jsonl, logs to $OUT/runs, and one markdown table to stdout
# and $OUT/bench_train.md: median epoch ms (training step / evaluation) of
# each, gcn's time over PyG sparse's, peak MiB of each and gcn's peak over
# PyG sparse's.  The exported data go to $EXPORT (default
# ${TMPDIR:-/tmp}/gcn-bench-export; about 3 GB per configuration at products
# size).  A run that runs out of GPU memory is a result, "(out of memory)" in
# the table (PyG's edge_index path does at products size on an 80 GB GPU: it
# gathers one row per edge); exit status 0 only when every other step
# succeeded.
set -u

CONFIGS=${CONFIGS:-"models/gcn.json models/gin.json"}
DATASETS=${DATASETS:-"ogbn-arxiv cora citeseer"}
FEATURES=${FEATURES:-random:128}
PRECISION=${PRECISION:-fp32}
EPOCHS=${EPOCHS:-200}
WARMUP=${WARMUP:-10}
EXPORT=${EXPORT:-${TMPDIR:-/tmp}/gcn-bench-export}

script=bench_train
. "$(dirname "$0")/env.sh"
if [ ! -x "$BUNDLE/gcnbench" ]; then
    echo "$script: no gcnbench in $BUNDLE (run 'make bundle' first)" >&2
    exit 2
fi
case $PRECISION in
fp32 | tf32) ;;
*)
    echo "$script: PRECISION: expected fp32 or tf32, not '$PRECISION'" >&2
    exit 2
    ;;
esac
mkdir -p "$OUT/runs" "$EXPORT"
: > "$OUT/bench_train.jsonl"
status=0

host_info > "$OUT/host.txt"

# failed LOG: shows why a run failed, and fails the script unless the run
# ran out of GPU memory.
failed() {
    tail -n 5 "$1" >&2
    grep -qi "out of memory" "$1" || status=1
}

# export_data CONFIG SPEC DIR LOG [gcntrain options]: the data gcntrain trains
# on, as .npy files in DIR.
export_data() {
    cfg=$1 spec=$2 dir=$3 log=$4
    shift 4
    "$run" gcntrain "$cfg" --dataset "$spec" --root "$DATA" "$@" --device cuda --epochs 1 \
        --runs 1 --reorder none --quiet --export-data "$dir" > "$log" 2>&1
}

cases=""
for cfg in $CONFIGS; do
    name=$(basename "$cfg" .json)
    for entry in $DATASETS; do
        spec=${entry%%@*}
        feat=""
        case $entry in *@*) feat=${entry#*@} ;; esac
        tag="$name.$(printf '%s' "$entry" | tr -c 'A-Za-z0-9._-' '_')"
        dir="$EXPORT/$tag"
        log="$OUT/runs/$tag.export.log"
        cases="$cases $name $entry $tag"

        echo "== $name on $spec: export" >&2
        exported=no
        if [ -z "$feat" ]; then
            case $spec in
            rmat* | chunglu*) feat=$FEATURES ;;
            *)
                if export_data "$cfg" "$spec" "$dir" "$log"; then
                    exported=yes
                elif grep -q "has no node features" "$log"; then
                    feat=$FEATURES
                fi
                ;;
            esac
        fi
        if [ $exported = no ] && { [ -z "$feat" ] ||
            ! export_data "$cfg" "$spec" "$dir" "$log" --features "$feat"; }; then
            tail -n 5 "$log" >&2
            status=1
            continue
        fi
        fopt=""
        [ -n "$feat" ] && fopt="--features $feat"

        echo "== $name on $spec: gcnbench train" >&2
        rm -f "$OUT/runs/$tag.gcn.jsonl"
        # shellcheck disable=SC2086
        if ! "$run" gcnbench train "$cfg" --dataset "$spec" --root "$DATA" $fopt \
            --warmup "$WARMUP" --epochs "$EPOCHS" --precision "$PRECISION" \
            --out "$OUT/runs/$tag.gcn.jsonl" \
            > "$OUT/runs/$tag.gcn.log" 2>&1; then
            failed "$OUT/runs/$tag.gcn.log"
        fi
        for adj in sparse edge_index; do
            echo "== $name on $spec: PyTorch Geometric, $adj" >&2
            if ! "$PYTHON" tools/compare/pyg_train.py "$cfg" "$dir" --bench --adjacency "$adj" \
                --precision "$PRECISION" --warmup "$WARMUP" --epochs "$EPOCHS" \
                --dataset-name "$spec" \
                > "$OUT/runs/$tag.pyg-$adj.jsonl" 2> "$OUT/runs/$tag.pyg-$adj.log"; then
                failed "$OUT/runs/$tag.pyg-$adj.log"
            fi
        done
        for side in gcn pyg-sparse pyg-edge_index; do
            if [ -s "$OUT/runs/$tag.$side.jsonl" ]; then
                cat "$OUT/runs/$tag.$side.jsonl" >> "$OUT/bench_train.jsonl"
            fi
        done
    done
done

# One markdown table from the runs' JSON lines; exits 1 when a run left none
# and did not run out of memory.
# shellcheck disable=SC2086
"$PYTHON" - "$OUT" $cases > "$OUT/bench_train.md" <<'EOF' || status=1
import json, os, sys

out, args = sys.argv[1], sys.argv[2:]
cases = [args[i:i + 3] for i in range(0, len(args), 3)]  # config, DATASETS entry, tag
SIDES = ("gcn", "pyg-sparse", "pyg-edge_index")

def record(tag, side):
    """The run's `bench: train` line, or None."""
    try:
        with open(os.path.join(out, "runs", f"{tag}.{side}.jsonl")) as f:
            lines = [json.loads(l) for l in f if l.startswith("{")]
    except (OSError, ValueError):
        return None
    lines = [o for o in lines if o.get("bench") == "train"]
    return lines[-1] if lines else None

def out_of_memory(tag, side):
    try:
        with open(os.path.join(out, "runs", f"{tag}.{side}.log")) as f:
            return "out of memory" in f.read().lower()
    except OSError:
        return False

def ms(r):
    if not isinstance(r, dict):
        return r
    return f"{r['epoch_ms']:.2f} ({r['train_ms']:.2f} / {r['eval_ms']:.2f})"

def mib(r):
    if not isinstance(r, dict):
        return r
    return "-" if r["peak_mib"] is None else f"{r['peak_mib']:.0f}"

def ratio(a, b, key):
    if not isinstance(a, dict) or not isinstance(b, dict) or not a.get(key) or not b.get(key):
        return "-"
    return f"{a[key] / b[key]:.2f}x"

rows, ok = [], True
for name, spec, tag in cases:
    r = {}
    for side in SIDES:
        r[side] = record(tag, side)
        if r[side] is None:
            r[side] = "(out of memory)" if out_of_memory(tag, side) else "(failed)"
            ok = ok and r[side] == "(out of memory)"
    rows.append((name, spec, r))
runs = [x for _, _, r in rows for x in r.values() if isinstance(x, dict)]
if runs:
    first = runs[0]
    pyg = next((x for x in runs if x["framework"] == "pyg"), {})
    print(f"{first['device']}, {first['precision']}, {first['epochs']} epochs "
          f"(medians after {first['warmup']} warm-up), torch {pyg.get('torch')}, "
          f"PyTorch Geometric {pyg.get('torch_geometric')}\n")
print("| config | dataset | gcn epoch ms (train / eval) | PyG sparse ms | PyG edge_index ms "
      "| gcn / PyG sparse | gcn peak MiB | PyG sparse MiB | PyG edge_index MiB "
      "| gcn / PyG sparse memory |")
print("|" + " --- |" * 10)
for name, spec, r in rows:
    g, s, e = (r[side] for side in SIDES)
    print(f"| {name} | {spec} | {ms(g)} | {ms(s)} | {ms(e)} | {ratio(g, s, 'epoch_ms')} "
          f"| {mib(g)} | {mib(s)} | {mib(e)} | {ratio(g, s, 'peak_mib')} |")
sys.exit(0 if ok else 1)
EOF
cat "$OUT/bench_train.md"

echo "$script: $( [ $status -eq 0 ] && echo ok || echo FAILED ) (results in $OUT)"
exit $status
