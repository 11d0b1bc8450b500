/* TU graph collections (Morris et al., TUDataset) in the layout TU ships,
 * plain or gzip'd, 1-based ids: DS_A.txt, DS_graph_indicator.txt,
 * DS_graph_labels.txt, and optionally DS_node_labels.txt (one-hot features)
 * and DS_node_attributes.txt (dense features after the one-hot columns). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The files a collection may have: those read, then those ignored. */
enum { TU_INDICATOR, TU_A, TU_GRAPH_LABELS, TU_NODE_LABELS, TU_NODE_ATTRIBUTES, TU_N_READ };
static const char *const tu_parts[] = {
    "graph_indicator", "A",           "graph_labels",    "node_labels",
    "node_attributes", "edge_labels", "edge_attributes", "graph_attributes"};
#define TU_N_PARTS ((int)(sizeof tu_parts / sizeof tu_parts[0]))

/* Lines per node or graph, blank ones included (an error, not skipped);
 * A: "i, j" records, blank lines skipped. */
static const gcn_record_fmt tu_rows = {.min_fields = 1, .max_fields = 1, .blank_records = true};
static const gcn_record_fmt tu_edges = {.sep = ',', .min_fields = 2, .max_fields = 2};

bool gcn_tu_is_folder(const char *dir, const char *name)
{
    char path[4096];
    for (int gz = 0; gz < 2; gz++) {
        int n = snprintf(path, sizeof path, "%s/%s_A.txt%s", dir, name, gz ? ".gz" : "");
        if (n > 0 && (size_t)n < sizeof path && gcn_path_is_file(path))
            return true;
    }
    return false;
}

uint64_t gcn_tu_fingerprint(const char *dir, const char *name, uint64_t salt)
{
    char names[2 * TU_N_PARTS][256];
    const char *files[2 * TU_N_PARTS + 1];
    for (int k = 0; k < 2 * TU_N_PARTS; k++) {
        snprintf(names[k], sizeof names[k], "%.200s_%s.txt%s", name, tu_parts[k / 2],
                 k % 2 ? ".gz" : "");
        files[k] = names[k];
    }
    files[2 * TU_N_PARTS] = NULL;
    return gcn_cache_fingerprint(dir, files, salt);
}

/* dir/name_part.txt, else dir/name_part.txt.gz when only that exists
 * (*found false when neither does: then the .txt name). */
static gcn_status part_path(gcn_ctx *ctx, const char *dir, const char *name, const char *part,
                            char **path, bool *found)
{
    size_t len = strlen(dir) + strlen(name) + strlen(part) + 16;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)path, len, 1));
    int plain = snprintf(*path, len, "%s/%s_%s.txt", dir, name, part);
    *found = gcn_path_is_file(*path);
    if (!*found) {
        strcpy(*path + plain, ".gz");
        *found = gcn_path_is_file(*path);
        if (!*found)
            (*path)[plain] = '\0';
    }
    return GCN_OK;
}

/* The file name in errors about counts another file gives. */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* DS_graph_indicator.txt: graph id of node i on line i, from 1, each
 * graph's nodes together and graphs in order. */
typedef struct indicator_file {
    int64_t n_nodes;
    gcn_i32vec starts; /* first node of each graph */
} indicator_file;

static gcn_status indicator_record(gcn_reader *r, char **f, void *user)
{
    indicator_file *t = user;
    int64_t g, graphs = t->starts.len;
    if (!f)
        return t->n_nodes ? GCN_OK
                          : gcn_reader_fail(r, GCN_ERR_FORMAT,
                                            "empty file, expected one graph id per node");
    if (t->n_nodes >= GCN_DS_MAX_NODES)
        return gcn_reader_fail(r, GCN_ERR_UNSUPPORTED, "too many nodes");
    GCN_TRY(gcn_reader_int(r, f[0], 1, 1, INT32_MAX, "graph id", &g));
    if (graphs == 0 && g != 1)
        return gcn_reader_fail(r, GCN_ERR_FORMAT,
                               "graph id %lld: expected 1, graph ids run from 1", (long long)g);
    if (g != graphs && g != graphs + 1)
        return gcn_reader_fail(r, GCN_ERR_FORMAT,
                               "graph id %lld after %lld: expected %lld or %lld (graph ids run "
                               "from 1 without gaps, each graph's nodes together, in order)",
                               (long long)g, (long long)graphs, (long long)graphs,
                               (long long)graphs + 1);
    if (g == graphs + 1)
        GCN_TRY(gcn_i32vec_push(r->ctx, &t->starts, (int32_t)t->n_nodes));
    t->n_nodes++;
    return GCN_OK;
}

static gcn_status read_indicator(gcn_ctx *ctx, const char *path, gcn_dataset *ds)
{
    indicator_file t = {0, {0}};
    gcn_status st = gcn_read_records(ctx, path, &tu_rows, indicator_record, &t);
    if (st == GCN_OK)
        st = gcn_i32vec_push(ctx, &t.starts, (int32_t)t.n_nodes);
    if (st != GCN_OK) {
        free(t.starts.data);
        return st;
    }
    ds->n_nodes = (int32_t)t.n_nodes;
    ds->n_graphs = (int32_t)t.starts.len - 1;
    ds->graph_ptr = t.starts.data;
    return GCN_OK;
}

/* DS_A.txt: "i, j" with 1-based node ids of one graph. */
typedef struct edge_file {
    const gcn_dataset *ds;
    const int32_t *graph_of; /* [n_nodes] */
    gcn_i32vec src, dst;
} edge_file;

static gcn_status edge_record(gcn_reader *r, char **f, void *user)
{
    edge_file *e = user;
    int64_t i, j;
    if (!f)
        return GCN_OK;
    GCN_TRY(gcn_reader_int(r, f[0], 1, 1, e->ds->n_nodes, "node id", &i));
    GCN_TRY(gcn_reader_int(r, f[1], 2, 1, e->ds->n_nodes, "node id", &j));
    int32_t gi = e->graph_of[i - 1], gj = e->graph_of[j - 1];
    if (gi != gj)
        return gcn_reader_fail(r, GCN_ERR_FORMAT,
                               "edge (%lld, %lld) joins graph %d and graph %d: edges must stay "
                               "within a graph",
                               (long long)i, (long long)j, gi + 1, gj + 1);
    GCN_TRY(gcn_i32vec_push(r->ctx, &e->src, (int32_t)(i - 1)));
    return gcn_i32vec_push(r->ctx, &e->dst, (int32_t)(j - 1));
}

static gcn_status read_edges(gcn_ctx *ctx, const char *path, gcn_dataset *ds)
{
    edge_file e = {ds, NULL, {0}, {0}};
    int32_t *graph_of = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&graph_of, (size_t)ds->n_nodes, sizeof *graph_of));
    for (int32_t g = 0; g < ds->n_graphs; g++)
        for (int32_t v = ds->graph_ptr[g]; v < ds->graph_ptr[g + 1]; v++)
            graph_of[v] = g;
    e.graph_of = graph_of;
    GCN_CHECK(gcn_read_records(ctx, path, &tu_edges, edge_record, &e));
    GCN_CHECK(gcn_ds_set_graph(ctx, ds, &e.src, &e.dst));
cleanup:
    free(graph_of);
    free(e.src.data);
    free(e.dst.data);
    return st;
}

/* One integer a line, `count` lines as `source` says (graph or node
 * labels). */
typedef struct int_file {
    int64_t count;
    const char *what, *source;
    gcn_i32vec values;
} int_file;

static gcn_status int_record(gcn_reader *r, char **f, void *user)
{
    int_file *l = user;
    int64_t y;
    GCN_TRY(gcn_reader_check_count(r, f, l->values.len, l->count, l->what, l->source));
    if (!f)
        return GCN_OK;
    GCN_TRY(gcn_reader_int(r, f[0], 1, INT32_MIN, INT32_MAX, "label", &y));
    return gcn_i32vec_push(r->ctx, &l->values, (int32_t)y);
}

static gcn_status read_ints(gcn_ctx *ctx, const char *path, int64_t count, const char *what,
                            const char *source, int32_t **out)
{
    int_file l = {count, what, source, {0}};
    gcn_status st = gcn_read_records(ctx, path, &tu_rows, int_record, &l);
    if (st != GCN_OK) {
        free(l.values.data);
        return st;
    }
    *out = l.values.data;
    return GCN_OK;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Graph labels, any integers, become 0 .. C - 1 in ascending order of
 * value; graph_label_values keeps the values. */
static gcn_status map_graph_labels(gcn_ctx *ctx, gcn_dataset *ds)
{
    int32_t n = ds->n_graphs, *values = NULL;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&values, (size_t)n, sizeof *values));
    memcpy(values, ds->graph_labels, (size_t)n * sizeof *values);
    qsort(values, (size_t)n, sizeof *values, cmp_i32);
    int32_t c = 0;
    for (int32_t g = 0; g < n; g++)
        if (g == 0 || values[g] != values[c - 1])
            values[c++] = values[g];
    for (int32_t g = 0; g < n; g++) {
        const int32_t *hit = bsearch(&ds->graph_labels[g], values, (size_t)c, sizeof *values,
                                     cmp_i32);
        ds->graph_labels[g] = (int32_t)(hit - values);
    }
    ds->graph_label_values = values;
    ds->n_graph_classes = c;
    return GCN_OK;
}

/* The feature matrix: one-hot node labels (column = label - smallest
 * label, as PyG's TUDataset), then the attribute columns. */
static gcn_status build_features(gcn_ctx *ctx, const char *labels_path, const int32_t *labels,
                                 const float *attr, int32_t attr_width, gcn_dataset *ds)
{
    int64_t lo = 0, hi = -1, n = ds->n_nodes;
    for (int64_t i = 0; labels && i < n; i++) {
        lo = i == 0 || labels[i] < lo ? labels[i] : lo;
        hi = i == 0 || labels[i] > hi ? labels[i] : hi;
    }
    int64_t one_hot = hi - lo + 1, width = one_hot + attr_width;
    if (one_hot > GCN_DS_MAX_CLASSES)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "%s: node labels %lld to %lld: more than %lld one-hot columns",
                         labels_path, (long long)lo, (long long)hi,
                         (long long)GCN_DS_MAX_CLASSES);
    if (width * n > GCN_DS_MAX_FEATURE_VALUES)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "%s: %lld x %lld features: too large",
                         ds->name, (long long)n, (long long)width);
    if (width == 0)
        return GCN_OK;
    GCN_TRY(gcn_ds_calloc(ctx, (void **)&ds->features, (size_t)(n * width), sizeof(float)));
    for (int64_t i = 0; i < n; i++) {
        float *row = ds->features + i * width;
        if (labels)
            row[labels[i] - lo] = 1.0f;
        if (attr_width)
            memcpy(row + one_hot, attr + i * attr_width, (size_t)attr_width * sizeof(float));
    }
    ds->n_features = (int32_t)width;
    strcpy(ds->feature_source, "file");
    return GCN_OK;
}

/* Node labels and attributes, where present, into the features. */
static gcn_status read_features(gcn_ctx *ctx, char *const *p, const bool *found,
                                gcn_dataset *ds)
{
    const char *source = base_name(p[TU_INDICATOR]);
    int32_t *labels = NULL, attr_width = 0;
    float *attr = NULL;
    gcn_status st = GCN_OK;
    if (found[TU_NODE_LABELS])
        GCN_CHECK(read_ints(ctx, p[TU_NODE_LABELS], ds->n_nodes, "node labels", source,
                            &labels));
    if (found[TU_NODE_ATTRIBUTES])
        GCN_CHECK(gcn_read_dense_rows(ctx, p[TU_NODE_ATTRIBUTES], ds->n_nodes, source, &attr,
                                      &attr_width));
    GCN_CHECK(build_features(ctx, p[TU_NODE_LABELS], labels, attr, attr_width, ds));
cleanup:
    free(labels);
    free(attr);
    return st;
}

gcn_status gcn_load_tu(gcn_ctx *ctx, const char *dir, const char *name, gcn_dataset *ds)
{
    char *p[TU_N_PARTS] = {NULL};
    bool found[TU_N_PARTS];
    gcn_status st = GCN_OK;
    for (int k = 0; k < TU_N_PARTS; k++)
        GCN_CHECK(part_path(ctx, dir, name, tu_parts[k], &p[k], &found[k]));
    GCN_CHECK(read_indicator(ctx, p[TU_INDICATOR], ds));
    GCN_CHECK(read_edges(ctx, p[TU_A], ds));
    GCN_CHECK(read_ints(ctx, p[TU_GRAPH_LABELS], ds->n_graphs, "graph labels",
                        base_name(p[TU_INDICATOR]), &ds->graph_labels));
    GCN_CHECK(map_graph_labels(ctx, ds));
    GCN_CHECK(read_features(ctx, p, found, ds));
    for (int k = TU_N_READ; k < TU_N_PARTS; k++)
        if (found[k])
            gcn_log(ctx, GCN_LOG_INFO, "%s: ignored (the TU loader reads node labels and "
                    "attributes only)", p[k]);
cleanup:
    for (int k = 0; k < TU_N_PARTS; k++)
        free(p[k]);
    return st;
}

gcn_status gcn_ds_check_graphs(gcn_ctx *ctx, const gcn_dataset *ds, const char *what)
{
    const int32_t *ptr = ds->graph_ptr;
    const gcn_graph *g = ds->graph;
    bool ok = ptr[0] == 0 && ptr[ds->n_graphs] == ds->n_nodes;
    for (int32_t k = 0; ok && k < ds->n_graphs; k++) {
        ok = ptr[k] < ptr[k + 1] && ptr[k + 1] <= ds->n_nodes && ds->graph_labels[k] >= 0 &&
             ds->graph_labels[k] < ds->n_graph_classes;
        /* Rows are sorted, so a row stays in its graph when its first and
         * last columns do. */
        for (int32_t v = ptr[k]; ok && v < ptr[k + 1]; v++) {
            int32_t a = g->row_ptr[v], b = g->row_ptr[v + 1];
            ok = a == b || (g->col_idx[a] >= ptr[k] && g->col_idx[b - 1] < ptr[k + 1]);
        }
    }
    for (int32_t c = 1; ok && c < ds->n_graph_classes; c++)
        ok = ds->graph_label_values[c - 1] < ds->graph_label_values[c];
    return ok ? GCN_OK
              : GCN_ERROR(ctx, GCN_ERR_FORMAT,
                          "%s: malformed graph collection (graph offsets, an edge between "
                          "graphs, or graph labels)",
                          what);
}
