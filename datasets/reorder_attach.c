/* A reordering's community levels and prior order attached to a matrix of
 * the reordered graph, so the selector tries AdaptGear's subgraph kernels
 * on it, and rowsplit visiting the rows in their original order. */
#include "../core/internal.h"
#include "../kernels/adaptgear/adaptgear.h"
#include "reorder.h"

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
