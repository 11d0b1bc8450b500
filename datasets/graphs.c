/* Batches of whole graphs of a collection (block-diagonal CSR, node ids,
 * segment vector) and the per-epoch shuffle of graph ids into batches. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void gcn_graph_batch_free(gcn_graph_batch **b)
{
    if (!b || !*b)
        return;
    gcn_graph_free(&(*b)->graph);
    free((*b)->node_ids);
    free((*b)->segment);
    free((*b)->graph_ptr);
    free((*b)->labels);
    free(*b);
    *b = NULL;
}

/* Checks the ids and counts the batch's nodes and entries. */
static gcn_status count_batch(gcn_ctx *ctx, const gcn_dataset *ds, const int32_t *ids,
                             int32_t n, int64_t *nodes, int64_t *nnz)
{
    const int32_t *ptr = ds->graph_ptr, *row_ptr = ds->graph->row_ptr;
    *nodes = *nnz = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t g = ids[k];
        if (g < 0 || g >= ds->n_graphs)
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "%s: graph id %d (batch entry %d) out of range [0, %d)", ds->name,
                             g, k, ds->n_graphs);
        *nodes += ptr[g + 1] - ptr[g];
        *nnz += row_ptr[ptr[g + 1]] - row_ptr[ptr[g]];
    }
    if (*nodes > GCN_DS_MAX_NODES || *nnz > INT32_MAX)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED,
                         "%s: a batch of %d graphs has %lld nodes and %lld entries: too large",
                         ds->name, n, (long long)*nodes, (long long)*nnz);
    return GCN_OK;
}

static gcn_status batch_alloc(gcn_ctx *ctx, const gcn_dataset *ds, int32_t n, int64_t nodes,
                              int64_t nnz, gcn_graph_batch *b)
{
    b->n_graphs = n;
    b->n_nodes = (int32_t)nodes;
    GCN_TRY(gcn_graph_create(ctx, &b->graph, (int32_t)nodes, nnz, ds->graph->values != NULL));
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&b->node_ids, (size_t)nodes, sizeof(int32_t)));
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&b->segment, (size_t)nodes, sizeof(int32_t)));
    GCN_TRY(gcn_ds_malloc(ctx, (void **)&b->graph_ptr, (size_t)n + 1, sizeof(int32_t)));
    if (ds->graph_labels)
        GCN_TRY(gcn_ds_malloc(ctx, (void **)&b->labels, (size_t)n, sizeof(int32_t)));
    return GCN_OK;
}

/* Appends graph g's rows to the batch as its graph k, starting at batch
 * node `at` and entry *e.  Returns false when an entry points outside
 * graph g. */
static bool copy_block(const gcn_dataset *ds, int32_t g, int32_t k, int32_t at, int32_t *e,
                       gcn_graph_batch *b)
{
    const gcn_graph *src = ds->graph;
    gcn_graph *dst = b->graph;
    int32_t first = ds->graph_ptr[g], end = ds->graph_ptr[g + 1], shift = at - first;
    for (int32_t v = first; v < end; v++, at++) {
        b->node_ids[at] = v;
        b->segment[at] = k;
        for (int32_t q = src->row_ptr[v]; q < src->row_ptr[v + 1]; q++, (*e)++) {
            if (src->col_idx[q] < first || src->col_idx[q] >= end)
                return false;
            dst->col_idx[*e] = src->col_idx[q] + shift;
            if (dst->values)
                dst->values[*e] = src->values[q];
        }
        dst->row_ptr[at + 1] = *e;
    }
    return true;
}

gcn_status gcn_graph_batch_build(gcn_ctx *ctx, const gcn_dataset *ds, const int32_t *graph_ids,
                                 int32_t n, gcn_graph_batch **out)
{
    GCN_ARG(ctx, ds && out && n >= 1 && graph_ids);
    *out = NULL;
    if (ds->n_graphs == 0 || !ds->graph)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "%s: not a collection of graphs", ds->name);
    int64_t nodes, nnz;
    GCN_TRY(count_batch(ctx, ds, graph_ids, n, &nodes, &nnz));
    gcn_graph_batch *b = calloc(1, sizeof *b);
    if (!b)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory");
    gcn_status st = batch_alloc(ctx, ds, n, nodes, nnz, b);
    if (st != GCN_OK) {
        gcn_graph_batch_free(&b);
        return st;
    }
    int32_t at = 0, e = 0;
    for (int32_t k = 0; k < n; k++) {
        int32_t g = graph_ids[k];
        b->graph_ptr[k] = at;
        if (b->labels)
            b->labels[k] = ds->graph_labels[g];
        if (!copy_block(ds, g, k, at, &e, b)) {
            gcn_graph_batch_free(&b);
            return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: graph %d has an edge to another graph",
                             ds->name, g);
        }
        at += ds->graph_ptr[g + 1] - ds->graph_ptr[g];
    }
    b->graph_ptr[n] = at;
    *out = b;
    return GCN_OK;
}

gcn_status gcn_graph_shuffle_batches(gcn_ctx *ctx, int32_t *ids, int32_t n, int32_t batch_size,
                                     int32_t *n_batches)
{
    GCN_ARG(ctx, (ids || n == 0) && n >= 0 && batch_size >= 1 && n_batches);
    for (int32_t k = 0; k < n; k++)
        GCN_ARG(ctx, ids[k] >= 0);
    GCN_TRY(gcn_ds_shuffle(ctx, GCN_RNG_SHUFFLE, ids, n));
    *n_batches = (int32_t)(((int64_t)n + batch_size - 1) / batch_size);
    return GCN_OK;
}
