# Sourced by the benchmark scripts: real_graphs prints the real graphs present
# under $DATA as gcnbench --dataset arguments (Planetoid, ogbn-arxiv, the two
# attributed graphs, every graph file under graphs/).
real_graphs() {
    for g in planetoid/cora:cora planetoid/citeseer:citeseer planetoid/pubmed:pubmed \
        ogbn_arxiv:ogbn-arxiv attributed/blogcatalog:blogcatalog attributed/flickr:flickr; do
        [ -e "$DATA/${g%%:*}" ] && printf ' --dataset %s' "${g#*:}"
    done
    for f in "$DATA"/graphs/*.txt.gz "$DATA"/graphs/*.mtx.gz; do
        [ -e "$f" ] || continue
        name=$(basename "$f")
        name=${name%.gz}
        name=${name%.*}
        case $name in *.groups) continue ;; esac
        printf ' --dataset %s' "$name"
    done
}
