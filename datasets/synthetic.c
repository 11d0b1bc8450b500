/* Synthetic datasets: the stochastic block model with class-correlated
 * features and a planted split, and the generator specs ("sbm:...",
 * "rmat:...", "chunglu:...") that gcn_dataset_load accepts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHUNK ((int64_t)1 << 16)

gcn_sbm_opts gcn_sbm_default_opts(void)
{
    return (gcn_sbm_opts){.size = sizeof(gcn_sbm_opts), .n_nodes = 3000, .n_classes = 6, .n_features = 64, .avg_degree = 8.0,
                          .homophily = 0.8, .feature_signal = 0.25f, .train_per_class = 20,
                          .n_valid = 500, .n_test = 1000};
}

/* Node ids grouped by class: members[first[c] .. first[c + 1]). */
typedef struct blocks {
    int32_t *first, *members;
} blocks;

static gcn_status group_by_class(gcn_ctx *ctx, const gcn_dataset *ds, blocks *b)
{
    GCN_TRY(gcn_ds_calloc(ctx, (void **)&b->first, (size_t)ds->n_classes + 1, sizeof(int32_t)));
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&b->members, (size_t)ds->n_nodes, sizeof(int32_t)));
    for (int32_t i = 0; i < ds->n_nodes; i++)
        b->first[ds->labels[i] + 1]++;
    for (int32_t c = 0; c < ds->n_classes; c++)
        b->first[c + 1] += b->first[c];
    int32_t *fill = b->first;
    for (int32_t i = 0, c; i < ds->n_nodes; i++) {
        c = ds->labels[i];
        int32_t pos = fill[c]++;
        b->members[pos] = i;
    }
    for (int32_t c = ds->n_classes; c > 0; c--)
        b->first[c] = b->first[c - 1];
    b->first[0] = 0;
    return GCN_OK;
}

/* Draws n_pairs edges with both ends in one class (intra) or in different
 * classes, both directions stored; self-loops are skipped. */
static gcn_status sbm_edges(gcn_ctx *ctx, const gcn_dataset *ds, const blocks *b, int64_t n_pairs,
                            bool intra, gcn_i32vec *src, gcn_i32vec *dst)
{
    uint32_t *r = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&r, 2 * (size_t)CHUNK, sizeof *r));
    for (int64_t made = 0; made < n_pairs;) {
        GCN_CHECK(gcn_rng_below(ctx, GCN_RNG_DATA, UINT32_MAX, r, 2 * CHUNK));
        for (int64_t k = 0; k < CHUNK && made < n_pairs; k++) {
            /* (word * size) >> 32 maps a 32-bit word onto [0, size). */
            int32_t s = (int32_t)(((uint64_t)r[2 * k] * (uint64_t)ds->n_nodes) >> 32);
            int32_t c = ds->labels[s], t;
            if (intra) {
                uint64_t size = (uint64_t)(b->first[c + 1] - b->first[c]);
                t = b->members[b->first[c] + (int32_t)(((uint64_t)r[2 * k + 1] * size) >> 32)];
            } else {
                t = (int32_t)(((uint64_t)r[2 * k + 1] * (uint64_t)ds->n_nodes) >> 32);
                if (ds->labels[t] == c)
                    continue;
            }
            if (s == t)
                continue;
            GCN_CHECK(gcn_i32vec_push(ctx, src, s));
            GCN_CHECK(gcn_i32vec_push(ctx, dst, t));
            GCN_CHECK(gcn_i32vec_push(ctx, src, t));
            GCN_CHECK(gcn_i32vec_push(ctx, dst, s));
            made++;
        }
    }
cleanup:
    free(r);
    return st;
}

/* x_i = mu_{class(i)} + N(0, I), mu_c ~ N(0, signal^2 I). */
static gcn_status sbm_features(gcn_ctx *ctx, gcn_dataset *ds, int32_t d, float signal)
{
    float *mu = NULL;
    size_t n = (size_t)ds->n_nodes * (size_t)d;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&mu, (size_t)ds->n_classes * (size_t)d, sizeof *mu));
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_rng_normal(ctx, GCN_RNG_DATA, mu, (int64_t)ds->n_classes * d));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&ds->features, n, sizeof(float)));
    GCN_CHECK(gcn_rng_normal(ctx, GCN_RNG_DATA, ds->features, (int64_t)n));
    for (int32_t i = 0; i < ds->n_nodes; i++)
        for (int32_t k = 0; k < d; k++)
            ds->features[(size_t)i * d + k] += signal * mu[(size_t)ds->labels[i] * d + k];
    ds->n_features = d;
    snprintf(ds->feature_source, sizeof ds->feature_source, "sbm");
cleanup:
    free(mu);
    return st;
}

static gcn_status sbm_fill(gcn_ctx *ctx, gcn_dataset *ds, const gcn_sbm_opts *o)
{
    /* At most n/2 classes leaves a class with two members for intra edges;
     * two classes are needed for inter edges. */
    if (o->n_nodes < 2 || o->n_classes < 1 || o->n_classes > o->n_nodes / 2 ||
        o->n_classes > GCN_DS_MAX_CLASSES || o->n_features < 0 ||
        !(o->avg_degree >= 0 && o->avg_degree < o->n_nodes - 1) ||
        !(o->homophily >= 0 && o->homophily <= 1) || !isfinite(o->feature_signal) ||
        (o->n_classes == 1 && o->homophily < 1) || o->train_per_class < 0 || o->n_valid < 0 ||
        o->n_test < 0 || (int64_t)o->n_nodes * o->n_features > GCN_DS_MAX_FEATURE_VALUES)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "sbm: invalid options (nodes %d, classes %d, features %d, degree %g, "
                         "homophily %g)",
                         o->n_nodes, o->n_classes, o->n_features, o->avg_degree, o->homophily);
    blocks b = {0};
    gcn_i32vec src = {0}, dst = {0};
    uint32_t *cls = NULL;
    gcn_status st = GCN_OK;
    ds->n_nodes = o->n_nodes;
    ds->n_classes = o->n_classes;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&cls, (size_t)o->n_nodes, sizeof *cls));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&ds->labels, (size_t)o->n_nodes, sizeof(int32_t)));
    if (o->ordered) {
        for (int32_t i = 0; i < o->n_nodes; i++)
            ds->labels[i] = (int32_t)((int64_t)i * o->n_classes / o->n_nodes);
    } else {
        GCN_CHECK(gcn_rng_below(ctx, GCN_RNG_DATA, (uint32_t)o->n_classes, cls, o->n_nodes));
        for (int32_t i = 0; i < o->n_nodes; i++)
            ds->labels[i] = i < o->n_classes ? i : (int32_t)cls[i]; /* no class is empty */
    }
    GCN_CHECK(group_by_class(ctx, ds, &b));
    int64_t pairs = llround(o->n_nodes * o->avg_degree / 2.0);
    int64_t intra = llround((double)pairs * o->homophily);
    GCN_CHECK(sbm_edges(ctx, ds, &b, intra, true, &src, &dst));
    GCN_CHECK(sbm_edges(ctx, ds, &b, pairs - intra, false, &src, &dst));
    GCN_CHECK(gcn_ds_set_graph(ctx, ds, &src, &dst));
    GCN_CHECK(sbm_features(ctx, ds, o->n_features, o->feature_signal));
    GCN_CHECK(gcn_dataset_draw_split(ctx, ds, o->train_per_class, o->n_valid, o->n_test));
    ds->split_drawn = false; /* planted: part of the dataset */
cleanup:
    free(cls);
    free(b.first);
    free(b.members);
    free(src.data);
    free(dst.data);
    return st;
}

gcn_status gcn_dataset_sbm(gcn_ctx *ctx, gcn_dataset **out, const gcn_sbm_opts *opts)
{
    GCN_ARG(ctx, out);
    *out = NULL;
    gcn_sbm_opts o = gcn_sbm_default_opts();
    if (opts)
        GCN_TRY(gcn_struct_import(ctx, "gcn_sbm_opts", &o, &o, sizeof o, opts));
    gcn_dataset *ds = calloc(1, sizeof *ds);
    if (!ds)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory");
    snprintf(ds->name, sizeof ds->name, "sbm");
    gcn_status st = sbm_fill(ctx, ds, &o);
    if (st != GCN_OK)
        gcn_dataset_free(&ds);
    *out = ds;
    return st;
}

/* ---- generator specs -------------------------------------------------- */

typedef struct param {
    const char *key;
    double value;
    double lo, hi; /* accepted range */
    bool integer;
} param;

static param *find_param(param *p, const char *key)
{
    for (; p->key; p++)
        if (strcmp(p->key, key) == 0)
            return p;
    return NULL;
}

/* "12", "1.17M", "2.5k", "0.57" */
static bool parse_number(const char *s, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s)
        return false;
    double mult = *end == 'k' || *end == 'K' ? 1e3 : *end == 'M' ? 1e6 : *end == 'G' ? 1e9 : 1.0;
    if (mult != 1.0)
        end++;
    *out = v * mult;
    return *end == '\0' && isfinite(*out);
}

/* Applies "key=value,..." (and the presets "arxiv" and "products" for the
 * node and edge counts) to the parameter table. */
static gcn_status parse_params(gcn_ctx *ctx, const char *spec, const char *args, param *p)
{
    char buf[512];
    if (snprintf(buf, sizeof buf, "%s", args) >= (int)sizeof buf)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "generator spec too long: %s", spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        param *nodes = find_param(p, "nodes"), *edges = find_param(p, "edges");
        if (!eq && nodes && edges && (!strcmp(item, "arxiv") || !strcmp(item, "products"))) {
            bool arxiv = !strcmp(item, "arxiv");
            nodes->value = arxiv ? 169343 : 2449029;
            edges->value = arxiv ? 1166243 : 61859140;
            continue;
        }
        param *q = eq ? (*eq = '\0', find_param(p, item)) : NULL;
        double v;
        if (!q)
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: unknown parameter '%s'", spec, item);
        if (!parse_number(eq + 1, &v) || v < q->lo || v > q->hi ||
            (q->integer && v != floor(v)))
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "%s: %s=%s: expected a%s number in [%g, %g]", spec, item, eq + 1,
                             q->integer ? "n integer" : "", q->lo, q->hi);
        q->value = v;
    }
    return GCN_OK;
}

static gcn_status gen_sbm(gcn_ctx *ctx, const char *spec, const char *args, gcn_dataset *ds)
{
    gcn_sbm_opts o = gcn_sbm_default_opts();
    param p[] = {{"nodes", o.n_nodes, 2, INT32_MAX - 1, true},
                 {"classes", o.n_classes, 1, GCN_DS_MAX_CLASSES, true},
                 {"features", o.n_features, 0, 1 << 20, true},
                 {"degree", o.avg_degree, 0, 1e6, false},
                 {"homophily", o.homophily, 0, 1, false},
                 {"signal", o.feature_signal, 0, 1e3, false},
                 {"train_per_class", o.train_per_class, 0, INT32_MAX, true},
                 {"valid", o.n_valid, 0, INT32_MAX, true},
                 {"test", o.n_test, 0, INT32_MAX, true},
                 {"ordered", 0, 0, 1, true},
                 {NULL, 0, 0, 0, false}};
    GCN_TRY(parse_params(ctx, spec, args, p));
    o.n_nodes = (int32_t)p[0].value;
    o.n_classes = (int32_t)p[1].value;
    o.n_features = (int32_t)p[2].value;
    o.avg_degree = p[3].value;
    o.homophily = p[4].value;
    o.feature_signal = (float)p[5].value;
    o.train_per_class = (int32_t)p[6].value;
    o.n_valid = (int32_t)p[7].value;
    o.n_test = (int32_t)p[8].value;
    o.ordered = p[9].value != 0;
    return sbm_fill(ctx, ds, &o);
}

/* Uniform random labels in [0, k) for a structure-only generator. */
static gcn_status random_labels(gcn_ctx *ctx, gcn_dataset *ds, int32_t k)
{
    uint32_t *r = NULL;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&r, (size_t)ds->n_nodes, sizeof *r));
    gcn_status st = gcn_rng_below(ctx, GCN_RNG_DATA, (uint32_t)k, r, ds->n_nodes);
    if (st == GCN_OK)
        st = gcn_ds_malloc(ctx, (void **)&ds->labels, (size_t)ds->n_nodes, sizeof(int32_t));
    for (int32_t i = 0; st == GCN_OK && i < ds->n_nodes; i++)
        ds->labels[i] = (int32_t)r[i];
    ds->n_classes = st == GCN_OK ? k : 0;
    free(r);
    return st;
}

static gcn_status gen_powerlaw(gcn_ctx *ctx, const char *spec, const char *args, bool rmat,
                               gcn_dataset *ds)
{
    param p[] = {{"nodes", 169343, 2, INT32_MAX - 1, true},
                 {"edges", 1166243, 0, INT32_MAX, true},
                 {"classes", 0, 0, GCN_DS_MAX_CLASSES, true},
                 {"a", 0.57, 0, 1, false},
                 {"b", 0.19, 0, 1, false},
                 {"c", 0.19, 0, 1, false},
                 {NULL, 0, 0, 0, false}};
    if (!rmat) { /* Chung-Lu takes the power-law exponent instead of a, b, c */
        p[3] = (param){"gamma", 2.5, 1.01, 100, false};
        p[4].key = NULL;
    }
    GCN_TRY(parse_params(ctx, spec, args, p));
    int32_t n = (int32_t)p[0].value;
    int64_t m = (int64_t)p[1].value;
    double *w = NULL;
    gcn_status st = GCN_OK;
    ds->n_nodes = n;
    if (rmat) {
        GCN_CHECK(gcn_graph_rmat(ctx, &ds->graph, n, m, p[3].value, p[4].value, p[5].value));
    } else {
        GCN_CHECK(gcn_ds_malloc(ctx, (void **)&w, (size_t)n, sizeof *w));
        GCN_CHECK(gcn_powerlaw_weights(ctx, n, m, p[3].value, w));
        GCN_CHECK(gcn_graph_chung_lu(ctx, &ds->graph, n, w, m));
    }
    ds->n_raw_edges = ds->graph->nnz;
    if (p[2].value > 0)
        GCN_CHECK(random_labels(ctx, ds, (int32_t)p[2].value));
cleanup:
    free(w);
    return st;
}

gcn_status gcn_ds_generate(gcn_ctx *ctx, const char *spec, gcn_dataset *ds, bool *generated)
{
    static const char *const kinds[] = {"synthetic", "sbm", "rmat", "chunglu"};
    *generated = false;
    for (int k = 0; k < 4; k++) {
        size_t len = strlen(kinds[k]);
        if (strncmp(spec, kinds[k], len) != 0 || (spec[len] != '\0' && spec[len] != ':'))
            continue;
        const char *args = spec[len] ? spec + len + 1 : "";
        *generated = true;
        snprintf(ds->name, sizeof ds->name, "%s", spec);
        if (k < 2)
            return gen_sbm(ctx, spec, args, ds);
        return gen_powerlaw(ctx, spec, args, k == 2, ds);
    }
    return GCN_OK;
}
