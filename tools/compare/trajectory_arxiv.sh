#!/bin/sh
# Whether gcn and PyTorch Geometric compute the same training steps on
# ogbn-arxiv, from the repository root with the bundle from `make bundle`:
#     OUT=/tmp/traj CONFIG=models/gin.json EPOCHS=50 tools/compare/trajectory_arxiv.sh
# Seeds and dropout masks come from different generators in the two
# frameworks, so their accuracies can only be compared as means over seeds
# (tools/compare/seeds_arxiv.sh).  This compares the computation itself: both
# start from one state and train the same model without dropout.  gcntrain
# trains epoch 1 of CONFIG with every dropout removed and saves a checkpoint
# and its data; gcntrain --resume and tools/compare/pyg_train.py --resume
# then continue from that checkpoint to EPOCHS (default 50).  Prints every
# epoch's training loss from both, with their relative difference, and the
# last epoch's accuracies.  Exit status 0 when the first resumed epoch, a
# forward pass from identical parameters, agrees within TOLERANCE (default
# 1e-4, relative); later epochs drift apart through rounding alone, and how
# fast is what the table shows.
set -u

CONFIG=${CONFIG:-models/gin.json}
EPOCHS=${EPOCHS:-50}
TOLERANCE=${TOLERANCE:-1e-4}

script=trajectory_arxiv
. "$(dirname "$0")/env.sh"
name=$(basename "$CONFIG" .json)
mkdir -p "$OUT"
cfg="$OUT/$name-nodropout.json"
"$PYTHON" - "$CONFIG" "$cfg" <<'EOF' || exit 2
import json, sys
cfg = json.load(open(sys.argv[1]))
for layer in cfg["layers"]:
    layer.pop("dropout", None)
json.dump(cfg, open(sys.argv[2], "w"), indent=1)
EOF

common="--dataset ogbn-arxiv --root $DATA --features random:128 --device cuda --runs 1 --quiet"
# shellcheck disable=SC2086
if ! "$run" gcntrain "$cfg" $common --epochs 1 --save "$OUT/epoch1.ckpt" \
    --export-data "$OUT/data" > "$OUT/gcn.save.log" 2>&1 ||
    ! "$run" gcntrain "$cfg" $common --epochs "$EPOCHS" --resume "$OUT/epoch1.ckpt" \
        --log "$OUT/gcn.jsonl" --force > "$OUT/gcn.log" 2>&1 ||
    ! "$PYTHON" tools/compare/pyg_train.py "$cfg" "$OUT/data" --runs 1 --epochs "$EPOCHS" \
        --resume "$OUT/epoch1.ckpt" --trace > "$OUT/pyg.log" 2>&1; then
    tail -n 5 "$OUT"/*.log >&2
    exit 1
fi

"$PYTHON" - "$OUT" "$TOLERANCE" <<'EOF'
import json, os, sys

out, tol = sys.argv[1], float(sys.argv[2])
gcn = {}
for line in open(os.path.join(out, "gcn.jsonl")):
    o = json.loads(line)
    if "loss" in o:
        gcn[o["epoch"]] = (o["loss"], o["train_acc"], o["valid_acc"], o["test_acc"])
pyg = {}
for line in open(os.path.join(out, "pyg.log")):
    f = line.split()
    if line.startswith("pyg epoch"):
        pyg[int(f[2])] = tuple(float(v) for v in f[4:11:2])
epochs = sorted(set(gcn) & set(pyg))
if not epochs:
    sys.exit("trajectory_arxiv: no epoch in common")
print(f"{'epoch':>5} {'gcn loss':>10} {'pyg loss':>10} {'rel diff':>9}")
rel = {}
for e in epochs:
    rel[e] = abs(gcn[e][0] - pyg[e][0]) / abs(pyg[e][0])
    print(f"{e:5d} {gcn[e][0]:10.6f} {pyg[e][0]:10.6f} {rel[e]:9.2e}")
last = epochs[-1]
for label, r in (("gcn", gcn[last]), ("pyg", pyg[last])):
    print(f"epoch {last} {label}: train {r[1]:.4f} valid {r[2]:.4f} test {r[3]:.4f}")
first = epochs[0]
ok = rel[first] <= tol
print(f"first resumed epoch ({first}): relative loss difference {rel[first]:.2e}, "
      f"{'within' if ok else 'OUTSIDE'} {tol:g}; largest over all epochs "
      f"{max(rel.values()):.2e}")
sys.exit(0 if ok else 1)
EOF
