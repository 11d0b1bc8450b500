/* Applying a reordering: the permuted graph, feature rows moved forward and
 * back, a whole dataset renumbered (gcn_dataset_reorder), the copy in
 * original ids that outputs are written from, and the community levels and
 * prior order attached to a matrix of the reordered graph. */
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../kernels/adaptgear/adaptgear.h"
#include "internal.h"

/* Rows up to this length are sorted in place by insertion. */
#define SHORT_ROW 32

typedef struct entry {
    int32_t col;
    float value;
} entry;

static int cmp_entry(const void *a, const void *b)
{
    int32_t x = ((const entry *)a)->col, y = ((const entry *)b)->col;
    return (x > y) - (x < y);
}

/* Sorts one row's columns, moving values (when present) with them; tmp has
 * room for the longest row when any is longer than SHORT_ROW. */
static void sort_row(int32_t *col, float *val, int32_t len, entry *tmp)
{
    if (len <= SHORT_ROW) {
        for (int32_t i = 1; i < len; i++) {
            int32_t c = col[i], j = i - 1;
            float v = val ? val[i] : 0.0f;
            for (; j >= 0 && col[j] > c; j--) {
                col[j + 1] = col[j];
                if (val)
                    val[j + 1] = val[j];
            }
            col[j + 1] = c;
            if (val)
                val[j + 1] = v;
        }
        return;
    }
    for (int32_t i = 0; i < len; i++)
        tmp[i] = (entry){col[i], val ? val[i] : 0.0f};
    qsort(tmp, (size_t)len, sizeof *tmp, cmp_entry);
    for (int32_t i = 0; i < len; i++) {
        col[i] = tmp[i].col;
        if (val)
            val[i] = tmp[i].value;
    }
}

gcn_status gcn_graph_permute(gcn_ctx *ctx, const gcn_graph *g, const gcn_reorder *r,
                             gcn_graph **out)
{
    GCN_ARG(ctx, g && r && out && r->n_nodes == g->n_nodes);
    *out = NULL;
    const int32_t *rp = g->row_ptr;
    gcn_graph *p = NULL;
    entry *tmp = NULL;
    int32_t longest = 0;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_graph_create(ctx, &p, g->n_nodes, g->nnz, g->values != NULL));
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t len = rp[r->order[i] + 1] - rp[r->order[i]];
        p->row_ptr[i + 1] = p->row_ptr[i] + len;
        longest = len > longest ? len : longest;
    }
    if (longest > SHORT_ROW)
        GCN_CHECK(gcn_ds_malloc(ctx, (void **)&tmp, (size_t)longest, sizeof *tmp));
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t from = rp[r->order[i]], to = p->row_ptr[i], len = p->row_ptr[i + 1] - to;
        for (int32_t k = 0; k < len; k++)
            p->col_idx[to + k] = r->position[g->col_idx[from + k]];
        if (g->values)
            memcpy(p->values + to, g->values + from, (size_t)len * sizeof *p->values);
        sort_row(p->col_idx + to, g->values ? p->values + to : NULL, len, tmp);
    }
    *out = p;
    p = NULL;
cleanup:
    free(tmp);
    gcn_graph_free(&p);
    return st;
}

void gcn_reorder_rows(const gcn_reorder *r, const float *src, int64_t cols, float *dst)
{
    for (int32_t i = 0; cols > 0 && i < r->n_nodes; i++)
        memcpy(dst + i * cols, src + r->order[i] * cols, (size_t)cols * sizeof *dst);
}

void gcn_reorder_rows_back(const gcn_reorder *r, const float *src, int64_t cols, float *dst)
{
    for (int32_t i = 0; cols > 0 && i < r->n_nodes; i++)
        memcpy(dst + i * cols, src + r->position[i] * cols, (size_t)cols * sizeof *dst);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* out[i] = position[ids[i]], sorted ascending; NULL for an empty list. */
static gcn_status map_ids(gcn_ctx *ctx, const int32_t *position, const int32_t *ids, int32_t n,
                          int32_t **out)
{
    *out = NULL;
    if (n == 0)
        return GCN_OK;
    GCN_TRY(gcn_ds_malloc(ctx, (void **)out, (size_t)n, sizeof **out));
    for (int32_t i = 0; i < n; i++)
        (*out)[i] = position[ids[i]];
    qsort(*out, (size_t)n, sizeof **out, cmp_i32);
    return GCN_OK;
}

gcn_status gcn_ds_permuted(gcn_ctx *ctx, const gcn_dataset *src, const gcn_reorder *r,
                           gcn_dataset *dst)
{
    *dst = *src;
    dst->graph = NULL;
    dst->features = NULL;
    dst->labels = NULL;
    dst->train = dst->valid = dst->test = NULL;
    dst->reorder = NULL;
    size_t n = (size_t)src->n_nodes;
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_graph_permute(ctx, src->graph, r, &dst->graph));
    if (src->features && src->n_features > 0) {
        GCN_CHECK(gcn_ds_malloc(ctx, (void **)&dst->features, n * (size_t)src->n_features,
                                sizeof *dst->features));
        gcn_reorder_rows(r, src->features, src->n_features, dst->features);
    }
    if (src->labels) {
        GCN_CHECK(gcn_ds_malloc(ctx, (void **)&dst->labels, n, sizeof *dst->labels));
        for (int32_t i = 0; i < src->n_nodes; i++)
            dst->labels[i] = src->labels[r->order[i]];
    }
    GCN_CHECK(map_ids(ctx, r->position, src->train, src->n_train, &dst->train));
    GCN_CHECK(map_ids(ctx, r->position, src->valid, src->n_valid, &dst->valid));
    GCN_CHECK(map_ids(ctx, r->position, src->test, src->n_test, &dst->test));
    return GCN_OK;
cleanup:
    gcn_ds_clear(dst);
    return st;
}

gcn_status gcn_ds_reorder(gcn_ctx *ctx, gcn_dataset *ds, const gcn_reorder_opts *o,
                          const char *cache, bool can_write)
{
    GCN_ARG(ctx, ds && ds->graph && o && ds->n_nodes == ds->graph->n_nodes);
    if (ds->reorder)
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "%s: already reordered (by %s); reorder the dataset as loaded",
                         ds->name, gcn_reorder_method_name(ds->reorder->method));
    uint32_t seed;
    GCN_TRY(gcn_reorder_seed(ctx, o, &seed));
    if (o->method == GCN_REORDER_NONE)
        return GCN_OK;
    if (ds->n_graphs > 0)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "%s: a collection of %d graphs is not reordered (each graph's nodes "
                         "stay together, in order)",
                         ds->name, ds->n_graphs);
    gcn_reorder *r = NULL;
    gcn_dataset moved;
    gcn_status st = GCN_OK;
    if (cache)
        GCN_CHECK(gcn_reorder_cached(ctx, ds->graph, o, seed, cache, can_write, NULL, &r));
    else
        GCN_CHECK(gcn_reorder_compute_seeded(ctx, ds->graph, o, seed, NULL, &r));
    GCN_CHECK(gcn_ds_permuted(ctx, ds, r, &moved));
    gcn_ds_clear(ds);
    *ds = moved;
    ds->reorder = r;
    return GCN_OK;
cleanup:
    gcn_reorder_free(&r);
    return st;
}

gcn_status gcn_dataset_reorder(gcn_ctx *ctx, gcn_dataset *ds, const gcn_reorder_opts *o)
{
    GCN_ARG(ctx, o);
    gcn_reorder_opts ro = gcn_reorder_default_opts(GCN_REORDER_NONE);
    GCN_TRY(gcn_struct_import(ctx, "gcn_reorder_opts", &ro, &ro, sizeof ro, o));
    return gcn_ds_reorder(ctx, ds, &ro, NULL, false);
}

gcn_status gcn_ds_original(gcn_ctx *ctx, const gcn_dataset *ds, gcn_dataset *out)
{
    GCN_ARG(ctx, ds && ds->reorder && out);
    gcn_reorder inverse = *ds->reorder;
    inverse.order = ds->reorder->position;
    inverse.position = ds->reorder->order;
    return gcn_ds_permuted(ctx, ds, &inverse, out);
}

/* Attaches the reordering's community levels and the original node order
 * to a matrix of the reordered graph.  With the levels, the selector tries
 * AdaptGear's subgraph kernels on the matrix; with the original order, it
 * tries rowsplit visiting the rows in that order. */
gcn_status gcn_reorder_attach(gcn_ctx *ctx, const gcn_reorder *r, gcn_csr *a)
{
    GCN_ARG(ctx, r && a);
    if (a->n_rows != r->n_nodes || a->n_cols != r->n_nodes)
        return GCN_ERROR(ctx, GCN_ERR_SHAPE,
                         "reorder: a %d x %d matrix cannot take communities of %d nodes",
                         a->n_rows, a->n_cols, r->n_nodes);
    if (r->method == GCN_REORDER_PARTS) /* rank blocks, not communities */
        return GCN_OK;
    const int32_t *part_ptr[GCN_REORDER_MAX_LEVELS];
    for (int l = 0; l < r->n_levels; l++)
        part_ptr[l] = r->part_ptr[l];
    GCN_TRY(gcn_csr_set_communities(ctx, a, r->n_levels, r->size, r->n_parts, part_ptr));
    return gcn_csr_set_prior_order(ctx, a, r->method == GCN_REORDER_NONE ? NULL : r->position);
}
