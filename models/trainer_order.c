/* A trainer moved between two numberings of its dataset's nodes (the order
 * as loaded and a reordering) between epochs: the model, the optimiser
 * state and the random streams stay, the data and matrices swap. */
#include <stdlib.h>

#include "../core/internal.h"
#include "trainer_impl.h"

void gcn_order_slot_free(gcn_order_slot **slot)
{
    if (!slot || !*slot)
        return;
    gcn_dataset_device_free(&(*slot)->dev);
    gcn_csr_free(&(*slot)->adj_gcn);
    gcn_csr_free(&(*slot)->adj_raw);
    free((*slot)->position);
    free((*slot)->order);
    free(*slot);
    *slot = NULL;
}

/* ds must be the trainer's dataset, renumbered or not. */
static gcn_status check_same(gcn_ctx *ctx, const gcn_trainer *tr, const gcn_dataset *ds)
{
    const gcn_tensor *x = tr->dev.features;
    if (!x || ds->n_nodes != x->rows || ds->n_features != x->cols ||
        ds->n_train != tr->split_rows[0] || ds->n_valid != tr->split_rows[1] ||
        ds->n_test != tr->split_rows[2])
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "trainer: %s (%d nodes, %d features, split %d/%d/%d) is not the "
                         "dataset the trainer was created for, renumbered",
                         ds->name, ds->n_nodes, ds->n_features, ds->n_train, ds->n_valid,
                         ds->n_test);
    return GCN_OK;
}

gcn_status gcn_trainer_stage_order(gcn_ctx *ctx, gcn_trainer *tr, const gcn_dataset *ds)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, tr && ds);
    if (tr->graphs || tr->rank)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "trainer: only a node-level trainer on one "
                         "context changes its node order");
    GCN_TRY(check_same(ctx, tr, ds));
    gcn_order_slot_free(&tr->staged);
    gcn_order_slot *slot = calloc(1, sizeof *slot);
    if (!slot)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    gcn_status st = GCN_OK;
    GCN_CHECK(gcn_trainer_keep_order(ctx, ds, &slot->position, &slot->order));
    st = gcn_dataset_upload(ctx, ds, &slot->dev);
    GCN_CHECK(gcn_trainer_allocating(ctx, st, "the reordered features, labels and split"));
    if (tr->adj_gcn) {
        st = gcn_dataset_adjacency(ctx, ds, GCN_ADJ_GCN, &slot->adj_gcn);
        GCN_CHECK(gcn_trainer_allocating(ctx, st, "the reordered normalised adjacency"));
    }
    if (tr->adj_raw) {
        st = gcn_dataset_adjacency(ctx, ds, GCN_ADJ_RAW, &slot->adj_raw);
        GCN_CHECK(gcn_trainer_allocating(ctx, st, "the reordered adjacency"));
    }
    tr->staged = slot;
    return GCN_OK;
cleanup:
    gcn_order_slot_free(&slot);
    return st;
}

#define SWAP(a, b)                                                                             \
    do {                                                                                       \
        __typeof__(a) t_ = (a);                                                                \
        (a) = (b);                                                                             \
        (b) = t_;                                                                              \
    } while (0)

gcn_status gcn_trainer_switch_order(gcn_ctx *ctx, gcn_trainer *tr)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, tr);
    if (!tr->staged)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "trainer: no other node order staged");
    gcn_order_slot *s = tr->staged;
    int64_t n = tr->dev.features->rows;
    /* the new order's ids first: a failure leaves the trainer as it was */
    GCN_TRY(gcn_ctx_set_node_ids(ctx, s->order, s->order ? n : 0, s->order ? n : 0));
    gcn_status st = gcn_model_set_sparse_input(ctx, tr->model, s->dev.features, NULL);
    if (st != GCN_OK) {
        gcn_ctx_set_node_ids(ctx, tr->order, tr->order ? n : 0, tr->order ? n : 0);
        gcn_model_set_sparse_input(ctx, tr->model, tr->dev.features, NULL);
        return gcn_trainer_allocating(ctx, st, "the reordered features as a sparse matrix");
    }
    SWAP(tr->dev, s->dev);
    SWAP(tr->adj_gcn, s->adj_gcn);
    SWAP(tr->adj_raw, s->adj_raw);
    SWAP(tr->position, s->position);
    SWAP(tr->order, s->order);
    if (tr->graph) /* it multiplies the old matrices: a steady epoch captures anew */
        gcn_cuda_graph_free(ctx, &tr->graph);
    tr->locked_epochs = 0;
    return GCN_OK;
}

void gcn_trainer_drop_order(gcn_trainer *tr)
{
    if (tr)
        gcn_order_slot_free(&tr->staged);
}

bool gcn_trainer_reordered(const gcn_trainer *tr)
{
    return tr && tr->order;
}
