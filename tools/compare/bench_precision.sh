#!/bin/sh
# The bf16 targets in one call on one GPU: gcn's epoch time and peak memory
# in fp32 and bf16 beside PyTorch Geometric's fp32, tf32 and 16-bit
# configurations, from the repository root with the bundle from
# `make bundle`:
#     OUT=/tmp/precision tools/compare/bench_precision.sh
#     OUT=/tmp/precision PARTS="gcn products" tools/compare/bench_precision.sh
#     OUT=/tmp/precision PARTS=accuracy tools/compare/bench_precision.sh
# PARTS (default "gcn pyg products") picks what runs:
#   gcn       `gcnbench train` of models/gcn.json and models/gin.json on
#             ogbn-arxiv (features random:128) in fp32 and in bf16;
#   pyg       tools/compare/pyg_train.py --bench on the same exported data:
#             the sparse-CSR fast path in fp32 and tf32, then 16 bits under
#             torch.autocast(bfloat16) on the edge_index path and on the
#             sparse path (a run that fails is recorded with its error);
#   products  models/gcn-products.json on chunglu:products,classes=47 with
#             random:100 features, fp32 and bf16 (PRODUCTS_EPOCHS timed
#             epochs, default 50);
#   accuracy  models/gcn.json on ogbn-arxiv over SEEDS seeds (default 10)
#             with gcntrain, fp32 then bf16: test accuracy at the
#             best-validation epoch (slow: every run trains its 500 epochs).
# Each benchmark runs WARMUP untimed epochs (default 10) and EPOCHS timed ones
# (default 200).  Results: $OUT/precision.jsonl (one `gcnbench train` line a
# run, PyG's in the same schema, accuracy lines), the logs in $OUT/runs, and
# $OUT/precision.md (also on stdout): the targets table with each measured
# ratio, then every run's epoch ms, GPU time by category and peak MiB.  Exit
# status 0 only when every gcn run and PyG's fp32 and tf32 runs succeeded.
set -u

PARTS=${PARTS:-"gcn pyg products"}
EPOCHS=${EPOCHS:-200}
WARMUP=${WARMUP:-10}
PRODUCTS_EPOCHS=${PRODUCTS_EPOCHS:-50}
SEEDS=${SEEDS:-10}
EXPORT=${EXPORT:-${TMPDIR:-/tmp}/gcn-precision-export}
FEATURES=random:128

script=bench_precision
need_pyg=no
case " $PARTS " in *" pyg "*) need_pyg=yes ;; esac
. "$(dirname "$0")/env.sh"
mkdir -p "$OUT/runs" "$EXPORT"
: > "$OUT/precision.jsonl"
status=0
host_info > "$OUT/host.txt"

has() {
    case " $PARTS " in *" $1 "*) return 0 ;; esac
    return 1
}

# bench TAG CONFIG SPEC FEATURES PRECISION EPOCHS: one `gcnbench train` run.
bench() {
    tag=$1
    echo "== $tag" >&2
    if "$run" gcnbench train "$2" --dataset "$3" --root "$DATA" --features "$4" \
        --precision "$5" --warmup "$WARMUP" --epochs "$6" \
        --out "$OUT/runs/$tag.jsonl" > "$OUT/runs/$tag.log" 2>&1; then
        sed "s/^{/{\"tag\":\"$tag\",/" "$OUT/runs/$tag.jsonl" >> "$OUT/precision.jsonl"
    else
        tail -n 5 "$OUT/runs/$tag.log" >&2
        status=1
    fi
}

# pyg TAG CONFIG ADJACENCY PRECISION REQUIRED: one pyg_train.py --bench run;
# a failure fails the script only when REQUIRED is yes (its error is kept
# in the log and in the results either way).
pyg() {
    tag=$1
    echo "== $tag" >&2
    if "$PYTHON" tools/compare/pyg_train.py "$2" "$EXPORT/$(basename "$2" .json)" --bench \
        --adjacency "$3" --precision "$4" --warmup "$WARMUP" --epochs "$EPOCHS" \
        --dataset-name ogbn-arxiv > "$OUT/runs/$tag.jsonl" 2> "$OUT/runs/$tag.log"; then
        sed "s/^{/{\"tag\":\"$tag\",/" "$OUT/runs/$tag.jsonl" >> "$OUT/precision.jsonl"
    else
        err=$(grep -v '^ ' "$OUT/runs/$tag.log" | tail -n 1 | tr -d '"\\' | cut -c1-300)
        printf '{"tag":"%s","framework":"pyg","error":"%s"}\n' "$tag" "$err" \
            >> "$OUT/precision.jsonl"
        echo "$tag: $err" >&2
        [ "$5" = yes ] && status=1
    fi
}

for cfg in models/gcn.json models/gin.json; do
    name=$(basename "$cfg" .json)
    if has gcn; then
        for p in fp32 bf16; do
            bench "$name.arxiv.$p" "$cfg" ogbn-arxiv "$FEATURES" "$p" "$EPOCHS"
        done
    fi
    if has pyg; then
        echo "== $name: export" >&2
        if ! "$run" gcntrain "$cfg" --dataset ogbn-arxiv --root "$DATA" --features "$FEATURES" \
            --device cuda --epochs 1 --runs 1 --reorder none --quiet \
            --export-data "$EXPORT/$name" > "$OUT/runs/$name.export.log" 2>&1; then
            tail -n 5 "$OUT/runs/$name.export.log" >&2
            status=1
            continue
        fi
        pyg "$name.arxiv.pyg-sparse-fp32" "$cfg" sparse fp32 yes
        pyg "$name.arxiv.pyg-sparse-tf32" "$cfg" sparse tf32 yes
        pyg "$name.arxiv.pyg-edge_index-bf16" "$cfg" edge_index bf16 no
        pyg "$name.arxiv.pyg-sparse-bf16" "$cfg" sparse bf16 no
    fi
done

if has products; then
    for p in fp32 bf16; do
        bench "gcn-products.$p" models/gcn-products.json chunglu:products,classes=47 random:100 \
            "$p" "$PRODUCTS_EPOCHS"
    done
fi

if has accuracy; then
    for p in fp32 bf16; do
        tag=gcn.arxiv.seeds.$p
        echo "== $tag" >&2
        rm -f "$OUT/runs/$tag.log.jsonl"
        if "$run" gcntrain models/gcn.json --dataset ogbn-arxiv --root "$DATA" \
            --features "$FEATURES" --device cuda --precision "$p" --runs "$SEEDS" --seed 0 \
            --log "$OUT/runs/$tag.log.jsonl" --force --quiet > "$OUT/runs/$tag.log" 2>&1; then
            "$PYTHON" - "$tag" "$p" "$OUT/runs/$tag.log.jsonl" >> "$OUT/precision.jsonl" <<'EOF'
import json, statistics, sys
tag, precision, path = sys.argv[1:]
acc = [o["best_test_acc"] for o in map(json.loads, open(path)) if "best_test_acc" in o]
print(json.dumps({"tag": tag, "bench": "accuracy", "precision": precision, "test_acc": acc,
                  "mean": statistics.mean(acc),
                  "std": statistics.stdev(acc) if len(acc) > 1 else 0.0}))
EOF
        else
            tail -n 5 "$OUT/runs/$tag.log" >&2
            status=1
        fi
    done
fi

"$PYTHON" - "$OUT/precision.jsonl" > "$OUT/precision.md" <<'EOF' || status=1
import json, sys

runs = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    runs[o["tag"]] = o

def get(tag, key):
    o = runs.get(tag)
    return o.get(key) if o and "error" not in o else None

def ratio(a, b, target):
    if a is None or b is None or not b:
        return "-", "-", "not measured"
    r = a / b
    return f"{r:.2f}x", f"<= {target:.2f}x", "met" if r <= target else "not met"

rows = [
    ("GCN arxiv epoch, bf16 / gcn fp32", ("gcn.arxiv.bf16", "gcn.arxiv.fp32", "epoch_ms", 0.55)),
    ("GCN arxiv epoch, bf16 / PyG fp32 sparse",
     ("gcn.arxiv.bf16", "gcn.arxiv.pyg-sparse-fp32", "epoch_ms", 0.25)),
    ("GIN arxiv epoch, bf16 / PyG fp32 sparse",
     ("gin.arxiv.bf16", "gin.arxiv.pyg-sparse-fp32", "epoch_ms", 0.45)),
    ("GCN arxiv peak, bf16 / gcn fp32", ("gcn.arxiv.bf16", "gcn.arxiv.fp32", "peak_mib", 0.55)),
    ("GIN arxiv peak, bf16 / gcn fp32", ("gin.arxiv.bf16", "gin.arxiv.fp32", "peak_mib", 0.55)),
    ("products GCN 3x256 epoch, bf16 / fp32",
     ("gcn-products.bf16", "gcn-products.fp32", "epoch_ms", 0.60)),
    ("products GCN 3x256 peak, bf16 / fp32",
     ("gcn-products.bf16", "gcn-products.fp32", "peak_mib", 0.55)),
]
first = next((o for o in runs.values() if o.get("device")), {})
print(f"{first.get('device', '?')}; medians of the timed epochs; peak = the run's high-water "
      "mark, data included\n")
print("| measurement | measured | target | |")
print("| --- | --- | --- | --- |")
for label, (a, b, key, target) in rows:
    m, t, ok = ratio(get(a, key), get(b, key), target)
    print(f"| {label} | {m} | {t} | {ok} |")
def spmm_ms(tag):
    g = get(tag, "gpu_ms")
    return g.get("spmm") if isinstance(g, dict) else None

for name in ("gcn", "gin"):  # no target: where an epoch's time goes
    a, b = spmm_ms(f"{name}.arxiv.bf16"), spmm_ms(f"{name}.arxiv.fp32")
    m = f"{a / b:.2f}x" if a and b else "-"
    print(f"| {name.upper()} arxiv SpMM GPU ms an epoch, bf16 / fp32 | {m} | (profile) | |")
acc = {p: runs.get(f"gcn.arxiv.seeds.{p}") for p in ("fp32", "bf16")}
if all(acc.values()):
    f, b = acc["fp32"], acc["bf16"]
    ok = abs(b["mean"] - f["mean"]) <= f["std"]
    print(f"| arxiv GCN test accuracy, {len(b['test_acc'])} seeds | bf16 {b['mean']:.4f} +- "
          f"{b['std']:.4f}, fp32 {f['mean']:.4f} +- {f['std']:.4f} | within one fp32 std "
          f"| {'met' if ok else 'not met'} |")

print("\n| run | epoch ms (train / eval) | gemm / spmm / elementwise / other / optimizer ms "
      "| peak MiB | test acc |")
print("| --- | --- | --- | --- | --- |")
for tag, o in runs.items():
    if o.get("bench") == "accuracy":
        continue
    if "error" in o:
        print(f"| {tag} | failed: {o['error']} | | | |")
        continue
    g = o.get("gpu_ms") or {}
    cats = " / ".join(f"{g[k]:.2f}" if isinstance(g.get(k), (int, float)) else "-"
                      for k in ("gemm", "spmm", "elementwise", "other", "optimizer"))
    peak = o.get("peak_mib")
    print(f"| {tag} | {o['epoch_ms']:.2f} ({o['train_ms']:.2f} / {o['eval_ms']:.2f}) | {cats} "
          f"| {'-' if peak is None else f'{peak:.0f}'} | {o.get('test_acc', 0):.4f} |")
EOF
cat "$OUT/precision.md"

echo "$script: $( [ $status -eq 0 ] && echo ok || echo FAILED ) (results in $OUT)"
exit $status
