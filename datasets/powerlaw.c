/* Power-law graph generators at any scale: R-MAT (recursive quadrant
 * choice) and Chung-Lu (endpoints drawn by expected degree), both producing
 * an exact number of distinct directed edges, deterministically per seed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHUNK_EDGES ((int64_t)1 << 16)
#define MAX_ROUNDS 64

/* Draws up to `want` candidate edges into src/dst (self-loops dropped);
 * *got receives how many were kept. */
typedef gcn_status (*edge_sampler)(gcn_ctx *ctx, void *state, int64_t want, int32_t *src,
                                   int32_t *dst, int64_t *got);

/* Rounds of sampling until the graph holds n_edges distinct edges: each
 * round draws the deficit and merges it in, so the count never overshoots. */
static gcn_status sample_distinct(gcn_ctx *ctx, int32_t n_nodes, int64_t n_edges,
                                  edge_sampler sample, void *state, gcn_graph **out)
{
    gcn_graph *g = NULL, *fresh = NULL, *merged = NULL;
    int32_t *src = NULL, *dst = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_graph_create(ctx, &g, n_nodes, 0, false));
    for (int round = 0; round < MAX_ROUNDS && g->nnz < n_edges; round++) {
        int64_t want = n_edges - g->nnz, got = 0;
        GCN_CHECK(gcn_ds_malloc(ctx, (void **)&src, (size_t)want, sizeof *src));
        GCN_CHECK(gcn_ds_malloc(ctx, (void **)&dst, (size_t)want, sizeof *dst));
        GCN_CHECK(sample(ctx, state, want, src, dst, &got));
        GCN_CHECK(gcn_graph_from_coo(ctx, &fresh, n_nodes, got, src, dst));
        free(src);
        free(dst);
        src = dst = NULL;
        GCN_CHECK(gcn_graph_union(ctx, g, fresh, &merged));
        gcn_graph_free(&g);
        gcn_graph_free(&fresh);
        g = merged;
        merged = NULL;
    }
    if (g->nnz < n_edges)
        gcn_log(ctx, GCN_LOG_WARN, "generator: %d of %lld distinct edges after %d rounds", g->nnz,
                (long long)n_edges, MAX_ROUNDS);
    *out = g;
    g = NULL;
cleanup:
    free(src);
    free(dst);
    gcn_graph_free(&g);
    gcn_graph_free(&fresh);
    return st;
}

typedef struct rmat_state {
    int32_t n_nodes;
    int scale;
    float a, ab, abc;
    int32_t *perm; /* random relabelling of the nodes */
    float *u;      /* CHUNK_EDGES * scale uniforms */
} rmat_state;

static gcn_status rmat_sample(gcn_ctx *ctx, void *state, int64_t want, int32_t *src, int32_t *dst,
                              int64_t *got)
{
    rmat_state *r = state;
    int64_t kept = 0;
    while (kept < want) {
        int64_t chunk = want - kept < CHUNK_EDGES ? want - kept : CHUNK_EDGES;
        GCN_TRY(gcn_rng_uniform(ctx, GCN_RNG_DATA, r->u, chunk * r->scale));
        for (int64_t e = 0; e < chunk; e++) {
            const float *u = r->u + e * r->scale;
            int64_t i = 0, j = 0;
            for (int l = 0; l < r->scale; l++) {
                float x = u[l];
                i = 2 * i + (x >= r->ab);
                j = 2 * j + ((x >= r->a && x < r->ab) || x >= r->abc);
            }
            if (i >= r->n_nodes || j >= r->n_nodes || i == j)
                continue;
            src[kept] = r->perm[i];
            dst[kept] = r->perm[j];
            kept++;
        }
    }
    *got = kept;
    return GCN_OK;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A uniform permutation of 0..n-1 drawn from GCN_RNG_DATA. */
static gcn_status random_perm(gcn_ctx *ctx, int32_t n, int32_t **perm)
{
    uint32_t *r = NULL;
    uint64_t *key = NULL;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&r, (size_t)n, sizeof *r));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&key, (size_t)n, sizeof *key));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)perm, (size_t)n, sizeof **perm));
    GCN_CHECK(gcn_rng_below(ctx, GCN_RNG_DATA, UINT32_MAX, r, n));
    for (int32_t i = 0; i < n; i++)
        key[i] = (uint64_t)r[i] << 32 | (uint32_t)i;
    qsort(key, (size_t)n, sizeof *key, cmp_u64);
    for (int32_t i = 0; i < n; i++)
        (*perm)[i] = (int32_t)(key[i] & 0xffffffffu);
cleanup:
    free(r);
    free(key);
    return st;
}

/* Rejects requests that cannot be met or would loop for ever. */
static gcn_status check_size(gcn_ctx *ctx, const char *gen, int32_t n_nodes, int64_t n_edges)
{
    if (n_nodes < 2 || n_edges < 0)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: needs at least 2 nodes and >= 0 edges",
                         gen);
    if ((double)n_edges > 0.5 * (double)n_nodes * (double)(n_nodes - 1) || n_edges > INT32_MAX)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "%s: %lld edges among %d nodes: at most half of all pairs, and < 2^31",
                         gen, (long long)n_edges, n_nodes);
    return GCN_OK;
}

gcn_status gcn_graph_rmat(gcn_ctx *ctx, gcn_graph **out, int32_t n_nodes, int64_t n_edges,
                          double a, double b, double c)
{
    GCN_ARG(ctx, out);
    *out = NULL;
    GCN_TRY(check_size(ctx, "rmat", n_nodes, n_edges));
    /* b + c > 0 makes an edge between two different nodes possible, so
     * sampling terminates. */
    if (!(a > 0 && b >= 0 && c >= 0 && b + c > 0 && a + b + c < 1.0))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "rmat: probabilities a=%g b=%g c=%g must be >= 0 with a > 0, "
                         "b + c > 0 and a + b + c < 1",
                         a, b, c);
    rmat_state r = {.n_nodes = n_nodes, .a = (float)a, .ab = (float)(a + b),
                    .abc = (float)(a + b + c)};
    while (((int64_t)1 << r.scale) < n_nodes)
        r.scale++;
    gcn_status st = GCN_OK;
    GCN_CHECK(random_perm(ctx, n_nodes, &r.perm));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&r.u, (size_t)(CHUNK_EDGES * r.scale), sizeof *r.u));
    GCN_CHECK(sample_distinct(ctx, n_nodes, n_edges, rmat_sample, &r, out));
cleanup:
    free(r.perm);
    free(r.u);
    return st;
}

/* Walker's alias table over n weights. */
typedef struct alias_state {
    int32_t n;
    float *prob;
    int32_t *alias;
    uint32_t *pick;
    float *coin;
} alias_state;

static gcn_status alias_build(gcn_ctx *ctx, alias_state *t, const double *w, int32_t n)
{
    double sum = 0.0;
    int32_t positive = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!(w[i] >= 0.0) || !isfinite(w[i]))
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "chung_lu: weight %d is %g", i, w[i]);
        sum += w[i];
        positive += w[i] > 0.0;
    }
    /* Two endpoints must be able to differ, or sampling never ends. */
    if (positive < 2)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "chung_lu: fewer than 2 positive weights");
    double *scaled = NULL;
    int32_t *small = NULL, *large = NULL, ns = 0, nl = 0;
    gcn_status st = GCN_OK;
    t->n = n;
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&t->prob, (size_t)n, sizeof *t->prob));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&t->alias, (size_t)n, sizeof *t->alias));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&scaled, (size_t)n, sizeof *scaled));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&small, (size_t)n, sizeof *small));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&large, (size_t)n, sizeof *large));
    for (int32_t i = 0; i < n; i++) {
        scaled[i] = w[i] * n / sum;
        if (scaled[i] < 1.0)
            small[ns++] = i;
        else
            large[nl++] = i;
    }
    while (ns > 0 && nl > 0) {
        int32_t s = small[--ns], l = large[nl - 1];
        t->prob[s] = (float)scaled[s];
        t->alias[s] = l;
        scaled[l] -= 1.0 - scaled[s];
        if (scaled[l] < 1.0) {
            nl--;
            small[ns++] = l;
        }
    }
    while (nl > 0) {
        int32_t l = large[--nl];
        t->prob[l] = 1.0f;
        t->alias[l] = l;
    }
    while (ns > 0) {
        int32_t s = small[--ns];
        t->prob[s] = 1.0f;
        t->alias[s] = s;
    }
cleanup:
    free(scaled);
    free(small);
    free(large);
    return st;
}

static gcn_status alias_sample(gcn_ctx *ctx, void *state, int64_t want, int32_t *src,
                               int32_t *dst, int64_t *got)
{
    alias_state *t = state;
    int64_t kept = 0;
    while (kept < want) {
        int64_t chunk = want - kept < CHUNK_EDGES ? want - kept : CHUNK_EDGES;
        GCN_TRY(gcn_rng_below(ctx, GCN_RNG_DATA, (uint32_t)t->n, t->pick, 2 * chunk));
        GCN_TRY(gcn_rng_uniform(ctx, GCN_RNG_DATA, t->coin, 2 * chunk));
        for (int64_t e = 0; e < chunk; e++) {
            int32_t end[2];
            for (int k = 0; k < 2; k++) {
                int32_t i = (int32_t)t->pick[2 * e + k];
                end[k] = t->coin[2 * e + k] < t->prob[i] ? i : t->alias[i];
            }
            if (end[0] == end[1])
                continue;
            src[kept] = end[0];
            dst[kept] = end[1];
            kept++;
        }
    }
    *got = kept;
    return GCN_OK;
}

gcn_status gcn_graph_chung_lu(gcn_ctx *ctx, gcn_graph **out, int32_t n_nodes,
                              const double *weight, int64_t n_edges)
{
    GCN_ARG(ctx, out && weight);
    *out = NULL;
    GCN_TRY(check_size(ctx, "chung_lu", n_nodes, n_edges));
    alias_state t = {0};
    gcn_status st = GCN_OK;
    GCN_CHECK(alias_build(ctx, &t, weight, n_nodes));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&t.pick, 2 * (size_t)CHUNK_EDGES, sizeof *t.pick));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&t.coin, 2 * (size_t)CHUNK_EDGES, sizeof *t.coin));
    GCN_CHECK(sample_distinct(ctx, n_nodes, n_edges, alias_sample, &t, out));
cleanup:
    free(t.prob);
    free(t.alias);
    free(t.pick);
    free(t.coin);
    return st;
}

gcn_status gcn_powerlaw_weights(gcn_ctx *ctx, int32_t n_nodes, int64_t n_edges, double gamma,
                                double *weight)
{
    GCN_ARG(ctx, weight && n_nodes > 0 && n_edges >= 0);
    if (!(gamma > 1.0))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "power law: gamma %g must be > 1", gamma);
    double alpha = 1.0 / (gamma - 1.0), sum = 0.0;
    for (int32_t i = 0; i < n_nodes; i++) {
        weight[i] = pow((double)i + 1.0, -alpha);
        sum += weight[i];
    }
    double scale = 2.0 * (double)n_edges / sum;
    for (int32_t i = 0; i < n_nodes; i++) {
        weight[i] *= scale;
        if (weight[i] > n_nodes - 1)
            weight[i] = n_nodes - 1;
    }
    return GCN_OK;
}
