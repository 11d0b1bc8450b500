/* The trainer of one rank of several (gcn_trainer_create_rank): the rank's
 * rows of the dataset and its blocks of the adjacency matrices with their
 * halos, the loss as the rank's share of the mean over every rank's
 * training rows, and the gradients summed over the ranks before each
 * optimiser step, so that the ranks together train the single-device
 * model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/comm.h"
#include "../core/internal.h"
#include "../core/ranks.h"
#include "../kernels/halo/halo.h"
#include "../kernels/spmm/spmm.h"
#include "trainer_impl.h"

struct gcn_trainer_rank {
    float loss_scale;  /* the rank's training rows over all ranks' */
    int n_params;
    gcn_tensor **params; /* borrowed from the model, listed on the first step */
};

/* ids in [lo, hi) of a sorted list, shifted to start at 0: a new array
 * (NULL when none) and its length. */
static gcn_status local_ids(gcn_ctx *ctx, const int32_t *ids, int32_t n, int32_t lo, int32_t hi,
                            int32_t **out, int32_t *n_out)
{
    int32_t k = 0;
    *out = NULL;
    for (int32_t i = 0; i < n; i++)
        k += ids[i] >= lo && ids[i] < hi;
    *n_out = k;
    if (k == 0)
        return GCN_OK;
    if (!(*out = malloc((size_t)k * sizeof **out)))
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    k = 0;
    for (int32_t i = 0; i < n; i++)
        if (ids[i] >= lo && ids[i] < hi)
            (*out)[k++] = ids[i] - lo;
    return GCN_OK;
}

gcn_status gcn_rank_upload(gcn_ctx *ctx, gcn_trainer *tr, const gcn_dataset *ds,
                           const gcn_part_rows *rows)
{
    int32_t lo = rows->row0, hi = rows->row0 + rows->n_local;
    gcn_dataset view = {.n_nodes = rows->n_local, .n_features = ds->n_features,
                        .features = ds->features + (int64_t)lo * ds->n_features,
                        .labels = ds->labels + lo, .n_classes = ds->n_classes};
    gcn_status st;
    snprintf(view.name, sizeof view.name, "%s", ds->name);
    GCN_CHECK(local_ids(ctx, ds->train, ds->n_train, lo, hi, &view.train, &view.n_train));
    GCN_CHECK(local_ids(ctx, ds->valid, ds->n_valid, lo, hi, &view.valid, &view.n_valid));
    GCN_CHECK(local_ids(ctx, ds->test, ds->n_test, lo, hi, &view.test, &view.n_test));
    GCN_CHECK(gcn_dataset_upload(ctx, &view, &tr->dev));
    if (!(tr->rank = calloc(1, sizeof *tr->rank))) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
        goto cleanup;
    }
    tr->rank->loss_scale = (float)view.n_train / (float)ds->n_train;
cleanup:
    free(view.train);
    free(view.valid);
    free(view.test);
    return st;
}

/* The chunks of the block's exchanges: the most any rank's block asks for
 * (gcn_halo_chunks_for), agreed on in one all-reduce of votes. */
static gcn_status agreed_chunks(gcn_ctx *ctx, const gcn_part_rows *rows, int *out)
{
    float votes[GCN_HALO_MAX_CHUNKS] = {0};
    int64_t n_send = rows->send_off[rows->n_ranks];
    votes[gcn_halo_chunks_for(rows->n_local, n_send, rows->n_halo) - 1] = 1.0f;
    gcn_tensor *t = NULL;
    gcn_status st = gcn_tensor_from_host(ctx, &t, votes, 1, GCN_HALO_MAX_CHUNKS);
    if (st == GCN_OK)
        st = gcn_comm_allreduce(ctx, t->data, GCN_HALO_MAX_CHUNKS);
    if (st == GCN_OK)
        st = gcn_tensor_to_host(ctx, t, votes);
    gcn_tensor_free(&t);
    *out = 1;
    for (int k = 0; st == GCN_OK && k < GCN_HALO_MAX_CHUNKS; k++)
        if (votes[k] > 0.0f)
            *out = k + 1;
    return st;
}

gcn_status gcn_rank_matrix(gcn_ctx *ctx, const gcn_part_rows *rows, bool wire_bf16,
                           gcn_csr **out)
{
    const gcn_graph *g = rows->local;
    int n_chunks;
    GCN_TRY(agreed_chunks(ctx, rows, &n_chunks));
    GCN_TRY(gcn_csr_create_block(ctx, out, rows->n_local, rows->n_cols, g->nnz, g->row_ptr,
                                 g->col_idx, g->values, rows->send_rows, rows->send_off,
                                 rows->recv_off, n_chunks));
    gcn_halo_set_wire(gcn_halo_of(*out), wire_bf16);
    return GCN_OK;
}

gcn_status gcn_rank_loss(gcn_ctx *ctx, gcn_trainer *tr, gcn_tensor *logits, gcn_tensor **loss)
{
    gcn_tensor *part = NULL;
    gcn_status st;
    /* a rank without training rows still runs backward (its rows feed the
     * others' through the halo), with a zero gradient of its own */
    if (tr->dev.train)
        GCN_CHECK(gcn_cross_entropy(ctx, logits, tr->dev.labels, tr->dev.train, &part));
    else
        GCN_CHECK(gcn_sum(ctx, logits, &part));
    GCN_CHECK(gcn_scale(ctx, part, tr->dev.train ? tr->rank->loss_scale : 0.0f, loss));
cleanup:
    gcn_tensor_free(&part);
    return st;
}

/* Sums every parameter's gradient over the ranks in one all-reduce. */
gcn_status gcn_rank_reduce_grads(gcn_ctx *ctx, gcn_trainer *tr)
{
    gcn_trainer_rank *rk = tr->rank;
    if (!rk->params) {
        rk->n_params = gcn_model_params(tr->model, NULL, NULL);
        if (!(rk->params = malloc((size_t)(rk->n_params > 0 ? rk->n_params : 1) *
                                  sizeof *rk->params)))
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
        gcn_model_params(tr->model, rk->params, NULL);
    }
    return gcn_comm_allreduce_grads(ctx, rk->params, rk->n_params);
}

void gcn_rank_free(gcn_trainer_rank **prk)
{
    gcn_trainer_rank *rk = *prk;
    if (!rk)
        return;
    *prk = NULL;
    free(rk->params);
    free(rk);
}

/* ---- every rank of a group ------------------------------------------------ */

static bool cfg_uses(const gcn_model_config *cfg, gcn_layer_type t)
{
    for (int i = 0; i < cfg->n_layers; i++)
        if (cfg->layers[i].type == t)
            return true;
    return false;
}

/* gcn_trainer_create_ranks's operands, shared by the rank threads. */
typedef struct create_job {
    const gcn_model_config *cfg;
    const gcn_dataset *ds;
    gcn_graph *adj[2];   /* the whole matrices, by gcn_adjacency (NULL: unused) */
    gcn_trainer **trainers;
} create_job;

static gcn_status create_rank(gcn_ctx *ctx, int rank, void *user)
{
    create_job *j = user;
    const int32_t *part_ptr = j->ds->reorder->part_ptr[0];
    int n = gcn_ctx_ranks(ctx);
    gcn_part_rows *rows[2] = {NULL, NULL};
    gcn_status st = GCN_OK;
    for (int k = 0; k < 2; k++)
        if (j->adj[k])
            GCN_CHECK(gcn_partition_rows(ctx, j->adj[k], part_ptr, n, rank, &rows[k]));
    GCN_CHECK(gcn_trainer_create_rank(ctx, &j->trainers[rank], j->cfg, j->ds, rows[GCN_ADJ_GCN],
                                      rows[GCN_ADJ_RAW]));
cleanup:
    gcn_part_rows_free(&rows[0]);
    gcn_part_rows_free(&rows[1]);
    return st;
}

gcn_status gcn_trainer_create_ranks(gcn_ctx *ctx, gcn_ranks *g, const gcn_model_config *cfg,
                                    const gcn_dataset *ds, gcn_trainer **trainers)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, g && cfg && ds && trainers);
    int n = gcn_ranks_count(g);
    memset(trainers, 0, (size_t)n * sizeof *trainers);
    if (!ds->reorder || ds->reorder->method != GCN_REORDER_PARTS || ds->reorder->n_levels != 1 ||
        ds->reorder->n_parts[0] != n)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "%s: training on %d ranks needs the dataset reordered by parts:%d "
                         "(gcn_dataset_reorder)", ds->name, n, n);
    create_job j = {.cfg = cfg, .ds = ds, .trainers = trainers};
    gcn_status st = GCN_OK;
    if (cfg_uses(cfg, GCN_LAYER_GCN))
        GCN_CHECK(gcn_dataset_adjacency_graph(ctx, ds, GCN_ADJ_GCN, &j.adj[GCN_ADJ_GCN]));
    if (cfg_uses(cfg, GCN_LAYER_GIN))
        GCN_CHECK(gcn_dataset_adjacency_graph(ctx, ds, GCN_ADJ_RAW, &j.adj[GCN_ADJ_RAW]));
    st = gcn_ranks_run(ctx, g, create_rank, &j);
cleanup:
    gcn_graph_free(&j.adj[0]);
    gcn_graph_free(&j.adj[1]);
    if (st != GCN_OK)
        for (int r = 0; r < n; r++)
            gcn_trainer_free(&trainers[r]);
    return st;
}

/* gcn_trainer_epoch_ranks's operands. */
typedef struct epoch_job {
    gcn_trainer **trainers;
    gcn_epoch_stats stats[GCN_MAX_RANKS];
} epoch_job;

static gcn_status epoch_rank(gcn_ctx *ctx, int rank, void *user)
{
    epoch_job *j = user;
    return gcn_trainer_epoch(ctx, j->trainers[rank], &j->stats[rank]);
}

gcn_status gcn_trainer_epoch_ranks(gcn_ctx *ctx, gcn_ranks *g, gcn_trainer **trainers,
                                   gcn_epoch_stats *stats)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, g && trainers && stats);
    epoch_job *j = calloc(1, sizeof *j);
    if (!j)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    j->trainers = trainers;
    gcn_status st = gcn_ranks_run(ctx, g, epoch_rank, j);
    if (st == GCN_OK) {
        *stats = j->stats[0];
        for (int r = 1; r < gcn_ranks_count(g); r++) {
            stats->train_ms = fmax(stats->train_ms, j->stats[r].train_ms);
            stats->eval_ms = fmax(stats->eval_ms, j->stats[r].eval_ms);
        }
    }
    free(j);
    return st;
}
