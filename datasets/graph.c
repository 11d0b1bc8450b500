/* Host CSR graphs: construction from edge lists, the structural transforms
 * (transpose, symmetrise, self-loops), GCN normalisation and upload. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "graph.h"
#include "internal.h"

gcn_status gcn_graph_create(gcn_ctx *ctx, gcn_graph **out, int32_t n_nodes, int64_t nnz,
                            bool with_values)
{
    GCN_ARG(ctx, out && n_nodes >= 0 && nnz >= 0);
    *out = NULL;
    if (nnz > INT32_MAX)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "graph with %lld entries: at most 2^31 - 1 are supported",
                         (long long)nnz);
    gcn_graph *g = calloc(1, sizeof *g);
    if (!g)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a graph");
    g->n_nodes = n_nodes;
    g->nnz = (int32_t)nnz;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_ds_calloc(ctx, (void **)&g->row_ptr, (size_t)n_nodes + 1, sizeof(int32_t)));
    GCN_CHECK(gcn_ds_malloc(ctx, (void **)&g->col_idx, (size_t)nnz, sizeof(int32_t)));
    if (with_values)
        GCN_CHECK(gcn_ds_malloc(ctx, (void **)&g->values, (size_t)nnz, sizeof(float)));
    *out = g;
    return GCN_OK;
cleanup:
    gcn_graph_free(&g);
    return st;
}

void gcn_graph_free(gcn_graph **g)
{
    if (!g || !*g)
        return;
    free((*g)->row_ptr);
    free((*g)->col_idx);
    free((*g)->values);
    free(*g);
    *g = NULL;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sorts one row's columns: insertion sort for the many short rows of a
 * sparse graph, qsort for hubs. */
static void sort_row(int32_t *c, int32_t len)
{
    if (len > 32) {
        qsort(c, (size_t)len, sizeof *c, cmp_i32);
        return;
    }
    for (int32_t i = 1; i < len; i++) {
        int32_t v = c[i], j = i - 1;
        while (j >= 0 && c[j] > v) {
            c[j + 1] = c[j];
            j--;
        }
        c[j + 1] = v;
    }
}

/* Sorts every row and drops repeated columns, compacting in place. */
static void sort_dedup_rows(gcn_graph *g)
{
    int32_t w = 0, start = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t end = g->row_ptr[i + 1];
        sort_row(g->col_idx + start, end - start);
        g->row_ptr[i] = w;
        for (int32_t k = start; k < end; k++)
            if (k == start || g->col_idx[k] != g->col_idx[k - 1])
                g->col_idx[w++] = g->col_idx[k];
        start = end;
    }
    g->row_ptr[g->n_nodes] = w;
    g->nnz = w;
    int32_t *shrunk = realloc(g->col_idx, (size_t)(w > 0 ? w : 1) * sizeof *shrunk);
    if (shrunk)
        g->col_idx = shrunk;
}

gcn_status gcn_graph_from_coo(gcn_ctx *ctx, gcn_graph **out, int32_t n_nodes, int64_t n_edges,
                              const int32_t *src, const int32_t *dst)
{
    GCN_ARG(ctx, out && n_nodes >= 0 && n_edges >= 0 && ((src && dst) || n_edges == 0));
    *out = NULL;
    for (int64_t e = 0; e < n_edges; e++)
        if (src[e] < 0 || src[e] >= n_nodes || dst[e] < 0 || dst[e] >= n_nodes)
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "edge %lld (%d -> %d) has a node id outside [0, %d)",
                             (long long)e, src[e], dst[e], n_nodes);
    gcn_graph *g = NULL;
    GCN_TRY(gcn_graph_create(ctx, &g, n_nodes, n_edges, false));
    int32_t *fill = NULL;
    gcn_status st = gcn_ds_malloc(ctx, (void **)&fill, (size_t)n_nodes + 1, sizeof *fill);
    if (st != GCN_OK) {
        gcn_graph_free(&g);
        return st;
    }
    for (int64_t e = 0; e < n_edges; e++)
        g->row_ptr[src[e] + 1]++;
    for (int32_t i = 0; i < n_nodes; i++)
        g->row_ptr[i + 1] += g->row_ptr[i];
    memcpy(fill, g->row_ptr, ((size_t)n_nodes + 1) * sizeof *fill);
    for (int64_t e = 0; e < n_edges; e++)
        g->col_idx[fill[src[e]]++] = dst[e];
    free(fill);
    sort_dedup_rows(g);
    *out = g;
    return GCN_OK;
}

gcn_status gcn_graph_validate(gcn_ctx *ctx, const gcn_graph *g)
{
    GCN_ARG(ctx, g);
    if (g->n_nodes < 0 || g->nnz < 0 || !g->row_ptr || (g->nnz > 0 && !g->col_idx))
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "graph: negative size or missing arrays");
    if (g->row_ptr[0] != 0 || g->row_ptr[g->n_nodes] != g->nnz)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "graph: row_ptr does not run from 0 to nnz %d",
                         g->nnz);
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t b = g->row_ptr[i], e = g->row_ptr[i + 1];
        if (e < b || e > g->nnz)
            return GCN_ERROR(ctx, GCN_ERR_FORMAT, "graph: row_ptr decreases at row %d", i);
        for (int32_t k = b; k < e; k++) {
            int32_t c = g->col_idx[k];
            if (c < 0 || c >= g->n_nodes || (k > b && c <= g->col_idx[k - 1]))
                return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                                 "graph: row %d has column %d out of range or out of order",
                                 i, c);
        }
    }
    return GCN_OK;
}

gcn_status gcn_graph_clone(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out)
{
    GCN_ARG(ctx, g && out);
    GCN_TRY(gcn_graph_create(ctx, out, g->n_nodes, g->nnz, g->values != NULL));
    gcn_graph *o = *out;
    memcpy(o->row_ptr, g->row_ptr, ((size_t)g->n_nodes + 1) * sizeof *o->row_ptr);
    if (g->nnz > 0) {
        memcpy(o->col_idx, g->col_idx, (size_t)g->nnz * sizeof *o->col_idx);
        if (g->values)
            memcpy(o->values, g->values, (size_t)g->nnz * sizeof *o->values);
    }
    return GCN_OK;
}

gcn_status gcn_graph_transpose(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out)
{
    GCN_ARG(ctx, g && out);
    GCN_TRY(gcn_graph_create(ctx, out, g->n_nodes, g->nnz, g->values != NULL));
    gcn_graph *t = *out;
    int32_t *fill = NULL;
    gcn_status st = gcn_ds_malloc(ctx, (void **)&fill, (size_t)g->n_nodes + 1, sizeof *fill);
    if (st != GCN_OK) {
        gcn_graph_free(out);
        return st;
    }
    for (int32_t k = 0; k < g->nnz; k++)
        t->row_ptr[g->col_idx[k] + 1]++;
    for (int32_t i = 0; i < g->n_nodes; i++)
        t->row_ptr[i + 1] += t->row_ptr[i];
    memcpy(fill, t->row_ptr, ((size_t)g->n_nodes + 1) * sizeof *fill);
    /* Rows of g are visited in ascending order, so each row of t comes out
     * sorted. */
    for (int32_t i = 0; i < g->n_nodes; i++)
        for (int32_t k = g->row_ptr[i]; k < g->row_ptr[i + 1]; k++) {
            int32_t p = fill[g->col_idx[k]]++;
            t->col_idx[p] = i;
            if (g->values)
                t->values[p] = g->values[k];
        }
    free(fill);
    return GCN_OK;
}

/* Merges the sorted rows a[i] and b[i]; counts only when out is NULL. */
static int32_t merge_row(const gcn_graph *a, const gcn_graph *b, int32_t i, int32_t *out)
{
    int32_t p = a->row_ptr[i], pe = a->row_ptr[i + 1];
    int32_t q = b->row_ptr[i], qe = b->row_ptr[i + 1], n = 0;
    while (p < pe || q < qe) {
        int32_t c;
        if (q >= qe || (p < pe && a->col_idx[p] < b->col_idx[q]))
            c = a->col_idx[p++];
        else if (p >= pe || b->col_idx[q] < a->col_idx[p])
            c = b->col_idx[q++];
        else {
            c = a->col_idx[p++];
            q++;
        }
        if (out)
            out[n] = c;
        n++;
    }
    return n;
}

gcn_status gcn_graph_union(gcn_ctx *ctx, const gcn_graph *a, const gcn_graph *b,
                           gcn_graph **out)
{
    GCN_ARG(ctx, a && b && out && a->n_nodes == b->n_nodes);
    int64_t total = 0;
    for (int32_t i = 0; i < a->n_nodes; i++)
        total += merge_row(a, b, i, NULL);
    GCN_TRY(gcn_graph_create(ctx, out, a->n_nodes, total, false));
    gcn_graph *s = *out;
    for (int32_t i = 0; i < a->n_nodes; i++)
        s->row_ptr[i + 1] = s->row_ptr[i] + merge_row(a, b, i, s->col_idx + s->row_ptr[i]);
    return GCN_OK;
}

gcn_status gcn_graph_symmetrize(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out)
{
    GCN_ARG(ctx, g && out);
    *out = NULL;
    gcn_graph *t = NULL;
    GCN_TRY(gcn_graph_transpose(ctx, g, &t));
    gcn_status st = gcn_graph_union(ctx, g, t, out);
    gcn_graph_free(&t);
    return st;
}

gcn_status gcn_graph_remove_self_loops(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out)
{
    GCN_ARG(ctx, g && out);
    int64_t loops = gcn_graph_count_self_loops(g);
    GCN_TRY(gcn_graph_create(ctx, out, g->n_nodes, g->nnz - loops, g->values != NULL));
    gcn_graph *o = *out;
    int32_t w = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        for (int32_t k = g->row_ptr[i]; k < g->row_ptr[i + 1]; k++) {
            if (g->col_idx[k] == i)
                continue;
            o->col_idx[w] = g->col_idx[k];
            if (g->values)
                o->values[w] = g->values[k];
            w++;
        }
        o->row_ptr[i + 1] = w;
    }
    return GCN_OK;
}

gcn_status gcn_graph_add_self_loops(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out)
{
    GCN_ARG(ctx, g && out);
    int64_t missing = g->n_nodes - gcn_graph_count_self_loops(g);
    GCN_TRY(gcn_graph_create(ctx, out, g->n_nodes, g->nnz + missing, true));
    gcn_graph *o = *out;
    int32_t w = 0;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        bool placed = false;
        for (int32_t k = g->row_ptr[i]; k < g->row_ptr[i + 1]; k++) {
            int32_t c = g->col_idx[k];
            if (!placed && c >= i) {
                placed = true;
                if (c > i) {
                    o->col_idx[w] = i;
                    o->values[w++] = 1.0f;
                }
            }
            o->col_idx[w] = c;
            o->values[w++] = g->values ? g->values[k] : 1.0f;
        }
        if (!placed) {
            o->col_idx[w] = i;
            o->values[w++] = 1.0f;
        }
        o->row_ptr[i + 1] = w;
    }
    return GCN_OK;
}

gcn_status gcn_graph_gcn_norm(gcn_ctx *ctx, const gcn_graph *g, gcn_graph **out)
{
    GCN_ARG(ctx, g && out);
    GCN_TRY(gcn_graph_add_self_loops(ctx, g, out));
    gcn_graph *o = *out;
    double *inv_sqrt = NULL;
    gcn_status st = gcn_ds_malloc(ctx, (void **)&inv_sqrt, (size_t)o->n_nodes, sizeof *inv_sqrt);
    if (st != GCN_OK) {
        gcn_graph_free(out);
        return st;
    }
    for (int32_t i = 0; i < o->n_nodes; i++) {
        double d = 0.0;
        for (int32_t k = o->row_ptr[i]; k < o->row_ptr[i + 1]; k++)
            d += o->values[k];
        inv_sqrt[i] = d > 0.0 ? 1.0 / sqrt(d) : 0.0;
    }
    for (int32_t i = 0; i < o->n_nodes; i++)
        for (int32_t k = o->row_ptr[i]; k < o->row_ptr[i + 1]; k++)
            o->values[k] = (float)(o->values[k] * (inv_sqrt[i] * inv_sqrt[o->col_idx[k]]));
    free(inv_sqrt);
    return GCN_OK;
}

/* Position of column c in row r, or -1. */
static int32_t find_entry(const gcn_graph *g, int32_t r, int32_t c)
{
    int32_t lo = g->row_ptr[r], hi = g->row_ptr[r + 1];
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (g->col_idx[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->row_ptr[r + 1] && g->col_idx[lo] == c ? lo : -1;
}

bool gcn_graph_is_symmetric(const gcn_graph *g)
{
    for (int32_t i = 0; i < g->n_nodes; i++)
        for (int32_t k = g->row_ptr[i]; k < g->row_ptr[i + 1]; k++) {
            int32_t m = find_entry(g, g->col_idx[k], i);
            if (m < 0 || (g->values && g->values[m] != g->values[k]))
                return false;
        }
    return true;
}

int64_t gcn_graph_count_self_loops(const gcn_graph *g)
{
    int64_t n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        n += find_entry(g, i, i) >= 0;
    return n;
}

/* The median row length by counting sort; NaN if the counts cannot be
 * allocated. */
static double median_degree(const gcn_graph *g, int32_t max_degree)
{
    int64_t *count = calloc((size_t)max_degree + 1, sizeof *count);
    if (!count)
        return NAN;
    for (int32_t i = 0; i < g->n_nodes; i++)
        count[g->row_ptr[i + 1] - g->row_ptr[i]]++;
    int64_t lo = (g->n_nodes - 1) / 2, hi = g->n_nodes / 2, seen = 0;
    double a = -1.0, b = -1.0;
    for (int32_t d = 0; d <= max_degree && b < 0.0; d++) {
        seen += count[d];
        if (a < 0.0 && seen > lo)
            a = d;
        if (seen > hi)
            b = d;
    }
    free(count);
    return 0.5 * (a + b);
}

void gcn_graph_degree_stats(const gcn_graph *g, gcn_degree_stats *s)
{
    memset(s, 0, sizeof *s);
    if (g->n_nodes == 0)
        return;
    s->min = INT32_MAX;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t d = g->row_ptr[i + 1] - g->row_ptr[i];
        s->min = d < s->min ? d : s->min;
        s->max = d > s->max ? d : s->max;
        s->n_isolated += d == 0;
        int b = 0;
        while (b < GCN_DEGREE_BUCKETS - 1 && (int64_t)d >= ((int64_t)1 << b))
            b++;
        s->hist[b]++;
    }
    s->mean = (double)g->nnz / g->n_nodes;
    s->median = median_degree(g, s->max);
}

gcn_status gcn_graph_to_csr(gcn_ctx *ctx, const gcn_graph *g, gcn_csr **out)
{
    GCN_ARG(ctx, g && out);
    return gcn_csr_create(ctx, out, g->n_nodes, g->n_nodes, g->nnz, g->row_ptr, g->col_idx,
                          g->values);
}
