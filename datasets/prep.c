/* What is done to a loaded dataset: feature substitution and
 * normalisation, drawing a split, the one-paragraph summary, and upload of
 * the adjacency, features, labels and split to the context's device. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_RANDOM_FEATURES (1 << 20)
#define MAX_RANDOM_CLASSES (1 << 16)

void gcn_ds_clear(gcn_dataset *ds)
{
    gcn_graph_free(&ds->graph);
    free(ds->features);
    free(ds->labels);
    free(ds->train);
    free(ds->valid);
    free(ds->test);
    gcn_reorder_free(&ds->reorder);
    free(ds->graph_ptr);
    free(ds->graph_labels);
    free(ds->graph_label_values);
    memset(ds, 0, sizeof *ds);
}

void gcn_dataset_free(gcn_dataset **ds)
{
    if (!ds || !*ds)
        return;
    gcn_ds_clear(*ds);
    free(*ds);
    *ds = NULL;
}

static gcn_status random_features(gcn_ctx *ctx, gcn_dataset *ds, const char *how, float **out,
                                  int32_t *width)
{
    char *end = NULL;
    long d = strtol(how + 7, &end, 10);
    if (end == how + 7 || *end || d < 1 || d > MAX_RANDOM_FEATURES)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "features option '%s': D in random:D must be 1 to %d", how,
                         MAX_RANDOM_FEATURES);
    size_t count = (size_t)ds->n_nodes * (size_t)d;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)out, count, sizeof(float)));
    gcn_status st = gcn_rng_normal(ctx, GCN_RNG_DATA, *out, (int64_t)count);
    if (st != GCN_OK) {
        free(*out);
        *out = NULL;
        return st;
    }
    *width = (int32_t)d;
    return GCN_OK;
}

gcn_status gcn_dataset_substitute_features(gcn_ctx *ctx, gcn_dataset *ds, const char *how)
{
    GCN_ARG(ctx, ds && how);
    float *x = NULL;
    int32_t width = 0;
    if (strncmp(how, "random:", 7) == 0) {
        GCN_TRY(random_features(ctx, ds, how, &x, &width));
    } else if (strcmp(how, "degree") == 0) {
        GCN_ARG(ctx, ds->graph != NULL);
        GCN_TRY(gcn_ds_malloc(ctx, (void **)&x, (size_t)ds->n_nodes, sizeof(float)));
        for (int32_t i = 0; i < ds->n_nodes; i++)
            x[i] = (float)log1p((double)(ds->graph->row_ptr[i + 1] - ds->graph->row_ptr[i]));
        width = 1;
    } else if (strcmp(how, "none") != 0) {
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "features option '%s': expected file, random:D, degree or none", how);
    }
    free(ds->features);
    ds->features = x;
    ds->n_features = width;
    snprintf(ds->feature_source, sizeof ds->feature_source, "%s", how);
    return GCN_OK;
}

gcn_status gcn_dataset_labels_parse(gcn_ctx *ctx, const char *how, int32_t *n_classes)
{
    *n_classes = 0;
    if (how && !strcmp(how, "file"))
        return GCN_OK;
    char *end = NULL;
    long k = how && !strncmp(how, "random:", 7) ? strtol(how + 7, &end, 10) : 0;
    if (k < 2 || k > MAX_RANDOM_CLASSES || end == how + 7 || *end)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "labels option '%s': expected file or random:K with K in [2, %d]",
                         how ? how : "(null)", MAX_RANDOM_CLASSES);
    *n_classes = (int32_t)k;
    return GCN_OK;
}

gcn_status gcn_dataset_substitute_labels(gcn_ctx *ctx, gcn_dataset *ds, const char *how)
{
    GCN_ARG(ctx, ds && how);
    int32_t k;
    GCN_TRY(gcn_dataset_labels_parse(ctx, how, &k));
    if (k == 0)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "labels option 'file' substitutes nothing (random:K does)");
    size_t n = (size_t)ds->n_nodes;
    int32_t *labels = NULL;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&labels, n ? n : 1, sizeof *labels));
    /* Draws below K < 2^31 read the same as unsigned and signed words. */
    gcn_status st = gcn_rng_below(ctx, GCN_RNG_DATA, (uint32_t)k, (uint32_t *)labels, (int64_t)n);
    if (st != GCN_OK) {
        free(labels);
        return st;
    }
    free(ds->labels);
    ds->labels = labels;
    ds->n_classes = (int32_t)k;
    snprintf(ds->label_source, sizeof ds->label_source, "%s", how);
    return GCN_OK;
}

gcn_status gcn_dataset_normalize_features(gcn_ctx *ctx, gcn_dataset *ds)
{
    GCN_ARG(ctx, ds);
    for (int64_t i = 0; i < ds->n_nodes && ds->n_features > 0; i++) {
        float *row = ds->features + i * ds->n_features;
        double sum = 0.0;
        for (int32_t k = 0; k < ds->n_features; k++)
            sum += row[k];
        if (sum == 0.0)
            continue;
        for (int32_t k = 0; k < ds->n_features; k++)
            row[k] = (float)(row[k] / sum);
    }
    return GCN_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

void gcn_ds_sort_by_key(int32_t *ids, uint64_t *key, int32_t n)
{
    for (int32_t j = 0; j < n; j++)
        key[j] = key[j] << 32 | (uint32_t)ids[j];
    qsort(key, (size_t)n, sizeof *key, cmp_u64);
    for (int32_t j = 0; j < n; j++)
        ids[j] = (int32_t)(key[j] & 0xffffffffu);
}

gcn_status gcn_ds_shuffle_with(gcn_ctx *ctx, gcn_rng_stream stream, int32_t *ids, int32_t n,
                               uint64_t *key, uint32_t *r)
{
    GCN_TRY(gcn_rng_below(ctx, stream, UINT32_MAX, r, n));
    for (int32_t j = 0; j < n; j++)
        key[j] = r[j];
    gcn_ds_sort_by_key(ids, key, n);
    return GCN_OK;
}

gcn_status gcn_ds_shuffle(gcn_ctx *ctx, gcn_rng_stream stream, int32_t *ids, int32_t n)
{
    uint64_t *key = NULL;
    uint32_t *r = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&key, (size_t)n, sizeof *key));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&r, (size_t)n, sizeof *r));
    st = gcn_ds_shuffle_with(ctx, stream, ids, n, key, r);
cleanup:
    free(key);
    free(r);
    return st;
}

/* Lists the labelled nodes, shuffled with GCN_RNG_SPLIT (gcn_ds_shuffle). */
static gcn_status shuffled_labelled(gcn_ctx *ctx, const gcn_dataset *ds, int32_t **out,
                                    int32_t *n_out)
{
    int32_t m = 0;
    for (int32_t i = 0; i < ds->n_nodes; i++)
        m += ds->labels[i] >= 0;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)out, (size_t)m, sizeof **out));
    for (int32_t i = 0, j = 0; i < ds->n_nodes; i++)
        if (ds->labels[i] >= 0)
            (*out)[j++] = i;
    *n_out = m;
    return gcn_ds_shuffle(ctx, GCN_RNG_SPLIT, *out, m);
}

static gcn_status take_list(gcn_ctx *ctx, const int32_t *src, int32_t n, int32_t **dst,
                            int32_t *n_dst)
{
    *n_dst = n;
    if (n == 0)
        return GCN_OK;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)dst, (size_t)n, sizeof **dst));
    memcpy(*dst, src, (size_t)n * sizeof *src);
    qsort(*dst, (size_t)n, sizeof **dst, cmp_i32);
    return GCN_OK;
}

gcn_status gcn_dataset_draw_split(gcn_ctx *ctx, gcn_dataset *ds, int32_t train_per_class,
                                  int32_t n_valid, int32_t n_test)
{
    GCN_ARG(ctx, ds && train_per_class >= 0 && n_valid >= 0 && n_test >= 0);
    if (!ds->labels)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "%s: cannot draw a split without labels", ds->name);
    int32_t *order = NULL, *per_class = NULL, *rest = NULL, m = 0, n_train = 0, n_rest = 0;
    gcn_status st = GCN_OK;
    GCN_CHECK(shuffled_labelled(ctx, ds, &order, &m));
    GCN_CHECK(gcn_ds_calloc(ctx, (void **)&per_class, (size_t)ds->n_classes, sizeof *per_class));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&rest, (size_t)m, sizeof *rest));
    /* Train nodes go to the front of order, the others to rest. */
    for (int32_t j = 0; j < m; j++) {
        int32_t c = ds->labels[order[j]];
        if (per_class[c] < train_per_class) {
            per_class[c]++;
            order[n_train++] = order[j];
        } else {
            rest[n_rest++] = order[j];
        }
    }
    n_valid = n_valid < n_rest ? n_valid : n_rest;
    n_test = n_test < n_rest - n_valid ? n_test : n_rest - n_valid;
    free(ds->train);
    free(ds->valid);
    free(ds->test);
    ds->train = ds->valid = ds->test = NULL;
    ds->n_train = ds->n_valid = ds->n_test = 0;
    GCN_CHECK(take_list(ctx, order, n_train, &ds->train, &ds->n_train));
    GCN_CHECK(take_list(ctx, rest, n_valid, &ds->valid, &ds->n_valid));
    GCN_CHECK(take_list(ctx, rest + n_valid, n_test, &ds->test, &ds->n_test));
    ds->split_drawn = true;
cleanup:
    free(order);
    free(per_class);
    free(rest);
    return st;
}

/* Appends to a describe() buffer, tracking the length the text needs. */
typedef struct text {
    char *buf;
    size_t size, len;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = t->len < t->size ? t->size - t->len : 0;
    int n = vsnprintf(room ? t->buf + t->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n;
}

static void put_histogram(text *t, const gcn_degree_stats *s)
{
    put(t, "; degree histogram");
    for (int b = 0; b < GCN_DEGREE_BUCKETS; b++) {
        if (!s->hist[b])
            continue;
        if (b <= 1)
            put(t, " %d:%lld", b, (long long)s->hist[b]);
        else
            put(t, " %lld-%lld:%lld", 1ll << (b - 1), (1ll << b) - 1, (long long)s->hist[b]);
    }
}

static void put_reorder(text *t, const gcn_reorder *r)
{
    put(t, "; reordered by %s (", gcn_reorder_method_name(r->method));
    for (int k = 0; k < r->n_levels; k++)
        put(t, "%d parts of %d, ", r->n_parts[k], r->size[k]);
    if (r->method == GCN_REORDER_PARTS)
        put(t, "edge cut %lld, ", (long long)r->edge_cut);
    if (r->from_cache)
        put(t, "permutation read from its file)");
    else
        put(t, "computed in %.3f s)", r->seconds);
}

/* The smallest or the largest graph's node count in a collection. */
static int32_t graph_size(const gcn_dataset *ds, bool largest)
{
    int32_t best = ds->graph_ptr[1] - ds->graph_ptr[0];
    for (int32_t g = 1; g < ds->n_graphs; g++) {
        int32_t n = ds->graph_ptr[g + 1] - ds->graph_ptr[g];
        best = (largest ? n > best : n < best) ? n : best;
    }
    return best;
}

int gcn_dataset_describe(const gcn_dataset *ds, char *buf, size_t size)
{
    text t = {buf, size, 0};
    if (buf && size)
        buf[0] = '\0';
    const gcn_graph *g = ds->graph;
    gcn_degree_stats s;
    gcn_graph_degree_stats(g, &s);
    bool sym = gcn_graph_is_symmetric(g);
    put(&t, "%s: %d nodes, %d adjacency entries (%s, %lld self-loops; %lld directed entries as "
            "stored)",
        ds->name, ds->n_nodes, g->nnz, sym ? "symmetric" : "directed",
        (long long)gcn_graph_count_self_loops(g), (long long)ds->n_raw_edges);
    put(&t, "; degree min %d, mean %.2f, median %.1f, max %d, %d isolated", s.min, s.mean,
        s.median, s.max, s.n_isolated);
    put_histogram(&t, &s);
    if (ds->n_features > 0)
        put(&t, "; %d features (%s)", ds->n_features, ds->feature_source);
    else
        put(&t, "; no features");
    if (ds->labels && ds->label_source[0])
        put(&t, "; %d classes (%s substitute labels)", ds->n_classes, ds->label_source);
    else if (ds->labels)
        put(&t, "; %d classes", ds->n_classes);
    else if (ds->n_graphs == 0)
        put(&t, "; no labels");
    if (ds->n_graphs > 0)
        put(&t, "; %d graphs of %d to %d nodes, %d graph classes", ds->n_graphs,
            graph_size(ds, false), graph_size(ds, true), ds->n_graph_classes);
    if (ds->n_train + ds->n_valid + ds->n_test > 0)
        put(&t, "; split %d / %d / %d (%s)", ds->n_train, ds->n_valid, ds->n_test,
            ds->split_drawn ? "drawn" : "shipped");
    if (ds->reorder)
        put_reorder(&t, ds->reorder);
    put(&t, "%s.", ds->from_cache ? "; read from the cache" : "");
    return (int)t.len;
}

gcn_status gcn_dataset_adjacency_graph(gcn_ctx *ctx, const gcn_dataset *ds, gcn_adjacency kind,
                                       gcn_graph **out)
{
    GCN_ARG(ctx, ds && ds->graph && out);
    *out = NULL;
    if (kind == GCN_ADJ_GCN)
        return gcn_graph_gcn_norm(ctx, ds->graph, out);
    if (kind != GCN_ADJ_RAW)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "unknown adjacency kind %d", (int)kind);
    GCN_TRY(gcn_graph_remove_self_loops(ctx, ds->graph, out));
    free((*out)->values);
    (*out)->values = NULL;
    return GCN_OK;
}

gcn_status gcn_dataset_adjacency(gcn_ctx *ctx, const gcn_dataset *ds, gcn_adjacency kind,
                                 gcn_csr **out)
{
    GCN_ARG(ctx, out);
    *out = NULL;
    gcn_graph *g = NULL;
    GCN_TRY(gcn_dataset_adjacency_graph(ctx, ds, kind, &g));
    gcn_status st = gcn_graph_to_csr(ctx, g, out);
    gcn_graph_free(&g);
    if (st == GCN_OK && ds->reorder)
        st = gcn_reorder_attach(ctx, ds->reorder, *out);
    if (st != GCN_OK)
        gcn_csr_free(out);
    return st;
}

void gcn_dataset_device_free(gcn_dataset_device *dev)
{
    if (!dev)
        return;
    gcn_tensor_free(&dev->features);
    gcn_index_free(&dev->labels);
    gcn_index_free(&dev->train);
    gcn_index_free(&dev->valid);
    gcn_index_free(&dev->test);
}

gcn_status gcn_dataset_upload(gcn_ctx *ctx, const gcn_dataset *ds, gcn_dataset_device *out)
{
    GCN_ARG(ctx, ds && out);
    memset(out, 0, sizeof *out);
    gcn_status st = GCN_OK;
    if (ds->n_features > 0)
        GCN_CHECK(gcn_tensor_from_host(ctx, &out->features, ds->features, ds->n_nodes,
                                       ds->n_features));
    if (ds->labels)
        GCN_CHECK(gcn_index_from_host(ctx, &out->labels, ds->labels, ds->n_nodes));
    if (ds->n_train)
        GCN_CHECK(gcn_index_from_host(ctx, &out->train, ds->train, ds->n_train));
    if (ds->n_valid)
        GCN_CHECK(gcn_index_from_host(ctx, &out->valid, ds->valid, ds->n_valid));
    if (ds->n_test)
        GCN_CHECK(gcn_index_from_host(ctx, &out->test, ds->test, ds->n_test));
    return GCN_OK;
cleanup:
    gcn_dataset_device_free(out);
    return st;
}
