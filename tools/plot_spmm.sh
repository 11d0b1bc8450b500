#!/bin/sh
# Draws gcnbench spmm or gcnbench select results (JSON lines) with gnuplot
# as PNG files:
#     tools/plot_spmm.sh RESULTS.jsonl [OUTDIR]
#   OUTDIR/PREFIX_speedup_F<F>.png  speed-up over cusparse per graph, one bar
#                                   per kernel, at feature width F
#   OUTDIR/PREFIX_geomean.png       geometric-mean speed-up over all graphs
#                                   against F (and of the best bar)
# PREFIX is spmm for gcnbench spmm results (every kernel; only default-knob
# results count, sweep lines are skipped) and select for gcnbench select
# results, whose bars are the selector's pick, the oracle and rowsplit on the
# original order, each over cuSPARSE on the original order.  When a case was
# measured more than once, the last line wins.
set -eu

in=${1:?usage: plot_spmm.sh RESULTS.jsonl [OUTDIR]}
out=${2:-$(dirname "$in")}
command -v gnuplot >/dev/null 2>&1 || {
    echo "plot_spmm: gnuplot not found" >&2
    exit 2
}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# graph feat kernel speedup, one line per default-knob case (flat JSON lines
# as gcnbench writes them).
awk '
function field(key,    m) {
    if (match($0, "\"" key "\":(\"[^\"]*\"|[^,}]*)")) {
        m = substr($0, RSTART + length(key) + 3, RLENGTH - length(key) - 3)
        gsub(/"/, "", m)
        return m
    }
    return ""
}
/"bench":"spmm"/ && /"knob":null/ {
    s = field("speedup_vs_cusparse")
    if (s == "" || s == "null") next
    print field("graph"), field("feat"), field("kernel"), s
}
/"bench":"select"/ {
    c = field("cusparse_original_ms")
    g = field("graph"); f = field("feat")
    print g, f, "selector", field("speedup_vs_cusparse_original")
    print g, f, "oracle", c / field("oracle_ms")
    print g, f, "rowsplit-original", c / field("rowsplit_original_ms")
}' "$in" > "$tmp/cases"
[ -s "$tmp/cases" ] || {
    echo "plot_spmm: no default-knob spmm or select results in $in" >&2
    exit 1
}
prefix=spmm
title="SpMM speed-up over cuSPARSE"
if grep -q '"bench":"select"' "$in"; then
    prefix=select
    title="AdaptGear selector: speed-up over cuSPARSE on the original order"
fi

kernels=$(awk '$3 != "cusparse" { if (!seen[$3]++) printf "%s ", $3 }' "$tmp/cases")
feats=$(awk '{ if (!seen[$2]++) print $2 }' "$tmp/cases" | sort -n | tr '\n' ' ')

# One table per F: graph, then the speed-up of each kernel (NaN if missing).
for f in $feats; do
    awk -v f="$f" -v ks="$kernels" '
    BEGIN { n = split(ks, k, " ") }
    $2 == f { v[$1 "|" $3] = $4; if (!seen[$1]++) g[++ng] = $1 }
    END {
        printf "graph"; for (i = 1; i <= n; i++) printf " %s", k[i]; print ""
        for (j = 1; j <= ng; j++) {
            printf "%s", g[j]
            for (i = 1; i <= n; i++) printf " %s", ((g[j] "|" k[i]) in v) ? v[g[j] "|" k[i]] : "NaN"
            print ""
        }
    }' "$tmp/cases" > "$tmp/F$f.dat"
    n_cols=$(($(echo "$kernels" | wc -w) + 1))
    gnuplot <<EOF
set terminal pngcairo size 1400,600 noenhanced
set output "$out/${prefix}_speedup_F$f.png"
set title "$title, F = $f (median times)"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "speed-up (x)"
set yrange [0:*]
set xtics rotate by -35
set rmargin 10
set grid ytics
set key top right
set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 linewidth 2
plot for [i=2:$n_cols] "$tmp/F$f.dat" using i:xtic(1) title columnheader(i)
EOF
done

# Geometric means per kernel and F, and of the best kernel per case.
awk -v ks="$kernels" '
BEGIN { n = split(ks, k, " ") }
$3 != "cusparse" {
    key = $1 "|" $2
    v[key "|" $3] = $4
    if (!seen[key]++) { c[++nc] = key; feat[key] = $2 }
    if (!fseen[$2]++) fs[++nf] = $2
}
END {
    printf "F"; for (i = 1; i <= n; i++) printf " %s", k[i]; print " best"
    for (j = 1; j <= nf; j++) {
        printf "%s", fs[j]
        for (i = 0; i <= n; i++) {
            s = 0; m = 0
            for (t = 1; t <= nc; t++) {
                if (feat[c[t]] != fs[j]) continue
                if (i > 0 && !((c[t] "|" k[i]) in v)) continue
                x = 0
                if (i > 0) x = v[c[t] "|" k[i]]
                else for (q = 1; q <= n; q++) if ((c[t] "|" k[q]) in v && v[c[t] "|" k[q]] > x) x = v[c[t] "|" k[q]]
                if (x > 0) { s += log(x); m++ }
            }
            g[i] = m ? exp(s / m) : "NaN"
        }
        for (i = 1; i <= n; i++) printf " %s", g[i]
        print " " g[0]
    }
}' "$tmp/cases" | sort -n > "$tmp/geomean.dat"
n_cols=$(($(echo "$kernels" | wc -w) + 2))
gnuplot <<EOF
set terminal pngcairo size 900,600 noenhanced
set output "$out/${prefix}_geomean.png"
set title "$title: geometric mean across graphs"
set logscale x 2
set xlabel "feature width F"
set ylabel "speed-up (x)"
set yrange [0:*]
set grid
set key top right
set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 linewidth 2
plot for [i=2:$n_cols] "$tmp/geomean.dat" using 1:i with linespoints linewidth 2 title columnheader(i)
EOF
echo "plot_spmm: $(find "$out" -maxdepth 1 -name "${prefix}_*.png" | wc -l) PNG files in $out"
