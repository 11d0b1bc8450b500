#!/bin/sh
# The node-order benchmark for a CUDA host (docs/perf.md, "Node order chosen
# by measurement"), from the repository root with the bundle from
# `make bundle`:
#     OUT=/tmp/order tools/bench_order.sh
# For each dataset, gcntrain $CONFIG (models/gcn.json) three times, each on
# a fresh cache folder: --reorder none and --reorder $METIS (metis: 16, 256
# and 4096; the forced orders), then the default, --reorder auto.
# Datasets: those of tools/bench_graphs.sh under $DATA (ogbn-arxiv, the
# Planetoid and attributed graphs present, every graph file), or DATASETS,
# e.g. the products-size graph, whose forced METIS takes 15 minutes:
#     DATASETS=chunglu:products,classes=47 CONFIG=models/gcn-products.json \
#         EPOCHS=60 FEATURES=random:100 OUT=/tmp/products tools/bench_order.sh
# Every run has substitute features (FEATURES, random:128); the graph files,
# which carry no class labels, substitute labels too (LABELS, random:40), so
# their accuracies are chance.  EPOCHS epochs a run (300; ogbn-arxiv 500, the
# headline's), on DEVICE (cuda).  Per run: its wall time, and its steady
# epoch, the median of train_ms + eval_ms over the last 100 epochs of its
# --log.  A markdown table on stdout and in $OUT/order.md; each run's output
# and log in $OUT/DATASET.ORDER.{txt,jsonl}.  Exit status 0 only when every
# run succeeded.
set -u

OUT=${OUT:?set OUT to a directory for the results}
BUNDLE=${BUNDLE:-build/bundle}
DATA=${DATA:-../shared/data}
CONFIG=${CONFIG:-models/gcn.json}
FEATURES=${FEATURES:-random:128}
LABELS=${LABELS:-random:40}
EPOCHS=${EPOCHS:-300}
METIS=${METIS:-metis}
DEVICE=${DEVICE:-cuda}

run="$BUNDLE/run"
if [ ! -x "$run" ] || [ ! -x "$BUNDLE/gcntrain" ]; then
    echo "bench_order: no bundle in $BUNDLE (run 'make bundle' first)" >&2
    exit 2
fi
. "$(dirname "$0")/bench_graphs.sh"
mkdir -p "$OUT"
DATASETS=${DATASETS:-$(real_graphs | sed "s/--dataset //g")}
status=0

now() {
    date +%s.%N
}

# The steady epoch of a --log: the median of train_ms + eval_ms over the last
# 100 epoch lines.
steady_ms() {
    sed -n 's/.*"epoch":[0-9]*,.*"train_ms":\([0-9.e+-]*\),"eval_ms":\([0-9.e+-]*\)}$/\1 \2/p' \
        "$1" | tail -n 100 | awk '{ print $1 + $2 }' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else
             printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Auto's decision from its --log, e.g. "reordered after epoch 340: 7.332 /
# 7.142 ms, noise 0.011", or what its output says instead.
decision() {
    line=$(grep '"order":' "$1.jsonl" | tail -n 1)
    if [ -n "$line" ]; then
        echo "$line" | sed 's/.*"epoch":\([0-9]*\),"order":"\([a-z]*\)".*"loaded_ms":\([0-9.]*\),"reordered_ms":\([0-9.]*\),"noise_ms":\([0-9.]*\).*/\2 after epoch \1: \3 \/ \4 ms, noise \5/' |
            awk '{ $5 = sprintf("%.3f", $5); $7 = sprintf("%.3f", $7); $10 = sprintf("%.3f", $10);
                   sub(/^loaded/, "as loaded"); print }'
    else
        sed -n 's/^order      //p' "$1.txt" | tail -n 1
    fi
}

table="$OUT/order.md"
{
    echo "| graph | nodes | \`none\` | \`$METIS\` | \`auto\` | auto / better forced | auto's decision (as loaded / reordered) |"
    echo "|---|---|---|---|---|---|---|"
} > "$table"
cat "$table"
for d in $DATASETS; do
    name=$(echo "$d" | tr ':,=/' '____')
    epochs=$EPOCHS
    [ "$d" = ogbn-arxiv ] && epochs=${ARXIV_EPOCHS:-500}
    extra="--features $FEATURES"
    # Graph files (bench_graphs.sh's edge lists and Matrix Market files)
    # have no labels.
    if ls "$DATA"/graphs/"$d".* >/dev/null 2>&1; then
        extra="$extra --labels $LABELS"
    fi
    cells="" times=""
    for r in none "$METIS" auto; do
        base="$OUT/$name.$r"
        cache="$OUT/cache.$name.$r"
        rm -rf "$cache" "$base.jsonl"
        t0=$(now)
        # shellcheck disable=SC2086
        "$run" gcntrain "$CONFIG" --dataset "$d" --root "$DATA" --no-download --device "$DEVICE" --quiet \
            --epochs "$epochs" --reorder "$r" --cache-dir "$cache" --log "$base.jsonl" \
            $extra > "$base.txt" 2>&1
        rc=$?
        t1=$(now)
        rm -rf "$cache"
        [ $rc -eq 0 ] || status=1
        wall=$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')
        if [ $rc -eq 0 ]; then
            ms=$(steady_ms "$base.jsonl")
            cells="$cells | $ms ms, $wall s"
        else
            ms=-
            cells="$cells | exit $rc, $wall s"
        fi
        times="$times $ms"
    done
    nodes=$(sed -n 's/^dataset    [^:]*: \([0-9]*\) nodes.*/\1/p' "$OUT/$name.none.txt")
    # auto's steady epoch over the better of the forced orders' (times holds
    # none's, METIS's and auto's; - for a failed run).
    ratio=$(echo "$times" | awk '$1 + 0 > 0 && $2 + 0 > 0 && $3 + 0 > 0 {
        b = $1 < $2 ? $1 : $2; printf "%.3f", $3 / b }')
    dec=$(decision "$OUT/$name.auto")
    echo "| $d | ${nodes:-?}$cells | ${ratio:--} | ${dec:--} |" |
        tee -a "$table"
done
echo "bench_order: $( [ $status -eq 0 ] && echo ok || echo FAILED ) (results in $OUT)"
exit $status
