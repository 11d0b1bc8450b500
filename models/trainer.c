/* The training loop: one epoch is forward, loss on the training rows,
 * backward, optimiser step, then an evaluation forward without the tape,
 * with one wait for the device at its end.  Steady-state epochs are
 * captured once as a CUDA graph and replayed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/comm.h"
#include "../core/internal.h"
#include "../kernels/spmm/spmm.h"
#include "../optim/optim_impl.h"
#include "trainer_impl.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* What an epoch reads back, in one download: the correct rows of each
 * split, then the training loss. */
typedef struct epoch_readout {
    double correct[3];
    float loss;
} epoch_readout;

/* Epochs that must begin with every SpMM site locked before the next is
 * captured: one whole epoch has then run with the locked kernels, so their
 * plans, the library handles and the pool's blocks all exist. */
enum { LOCKED_EPOCHS_BEFORE_CAPTURE = 2 };

static gcn_status check_dataset(gcn_ctx *ctx, const gcn_dataset *ds)
{
    if (!ds->features || ds->n_features < 1)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "dataset %s has no node features; substitute some with "
                         "--features random:D or --features degree", ds->name);
    if (!ds->labels || ds->n_classes < 2)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "dataset %s has no class labels; for timing, substitute K random "
                         "classes with --labels random:K", ds->name);
    if (ds->n_train < 1)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "dataset %s has no training nodes", ds->name);
    return GCN_OK;
}

/* One optimiser per distinct weight decay, so layers may override it. */
static gcn_status make_optimisers(gcn_ctx *ctx, gcn_trainer *tr)
{
    int n = gcn_model_params(tr->model, NULL, NULL);
    gcn_tensor **params = malloc((size_t)n * sizeof *params);
    gcn_tensor **group = malloc((size_t)n * sizeof *group);
    float *wd = malloc((size_t)n * sizeof *wd);
    bool *done = calloc((size_t)n, sizeof *done);
    gcn_status st = GCN_OK;
    if (!params || !group || !wd || !done) {
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
        goto cleanup;
    }
    gcn_model_params(tr->model, params, wd);
    for (int i = 0; i < n; i++) {
        if (done[i])
            continue;
        int k = 0;
        for (int j = i; j < n; j++)
            if (!done[j] && wd[j] == wd[i]) {
                group[k++] = params[j];
                done[j] = true;
            }
        gcn_optim_opts o = tr->cfg.optim;
        o.weight_decay = wd[i];
        GCN_CHECK(gcn_optim_create(ctx, &tr->opt[tr->n_opt], group, k, &o));
        tr->n_opt++;
    }
cleanup:
    free(params);
    free(group);
    free(wd);
    free(done);
    return st;
}

gcn_status gcn_trainer_allocating(gcn_ctx *ctx, gcn_status st, const char *what)
{
    return st == GCN_ERR_NOMEM ? gcn_error_prefix(ctx, st, "allocating %s", what) : st;
}

gcn_status gcn_trainer_keep_order(gcn_ctx *ctx, const gcn_dataset *ds, int32_t **position,
                                  int32_t **order)
{
    *position = *order = NULL;
    if (!ds->reorder)
        return GCN_OK;
    size_t bytes = (size_t)ds->n_nodes * sizeof **position;
    *position = malloc(bytes > 0 ? bytes : 1);
    *order = malloc(bytes > 0 ? bytes : 1);
    if (!*position || !*order) {
        free(*position);
        free(*order);
        *position = *order = NULL;
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    }
    memcpy(*position, ds->reorder->position, bytes);
    memcpy(*order, ds->reorder->order, bytes);
    return GCN_OK;
}

/* The context's node ids (gcn_ctx_set_node_ids) for a trainer of ds's rows
 * [lo, lo + n), so dropout draws the masks of the graph in its original
 * order; none for a graph-level trainer (ds NULL) or the original order's
 * rows themselves. */
static gcn_status set_node_ids(gcn_ctx *ctx, const gcn_dataset *ds, int32_t lo, int32_t n)
{
    const int32_t *order = ds && ds->reorder ? ds->reorder->order : NULL;
    if (!ds || (!order && lo == 0 && n == ds->n_nodes))
        return gcn_ctx_set_node_ids(ctx, NULL, 0, 0);
    if (order)
        return gcn_ctx_set_node_ids(ctx, order + lo, n, ds->n_nodes);
    int32_t *ids = malloc((size_t)n * sizeof *ids + 1);
    if (!ids)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    for (int32_t i = 0; i < n; i++)
        ids[i] = lo + i;
    gcn_status st = gcn_ctx_set_node_ids(ctx, ids, n, ds->n_nodes);
    free(ids);
    return st;
}

/* The adjacency matrices the model multiplies: the dataset's, or the
 * rank's blocks of them (rows[kind], with their halos). */
static gcn_status make_matrices(gcn_ctx *ctx, gcn_trainer *tr, const gcn_dataset *ds,
                                const gcn_part_rows *const *rows)
{
    gcn_status st;
    bool uses[2] = {[GCN_ADJ_GCN] = gcn_model_uses_gcn_adj(tr->model),
                    [GCN_ADJ_RAW] = gcn_model_uses_raw_adj(tr->model)};
    for (int k = 0; rows && k < 2; k++)
        if (uses[k] && !rows[k])
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "trainer_create_rank: the model multiplies the %s adjacency but "
                             "its block was not given", k == GCN_ADJ_GCN ? "normalised" : "plain");
    if (uses[GCN_ADJ_GCN]) {
        st = rows ? gcn_rank_matrix(ctx, rows[GCN_ADJ_GCN], tr->cfg.bf16, &tr->adj_gcn)
                  : gcn_dataset_adjacency(ctx, ds, GCN_ADJ_GCN, &tr->adj_gcn);
        GCN_TRY(gcn_trainer_allocating(ctx, st, "the normalised adjacency matrix"));
    }
    if (uses[GCN_ADJ_RAW]) {
        st = rows ? gcn_rank_matrix(ctx, rows[GCN_ADJ_RAW], tr->cfg.bf16, &tr->adj_raw)
                  : gcn_dataset_adjacency(ctx, ds, GCN_ADJ_RAW, &tr->adj_raw);
        GCN_TRY(gcn_trainer_allocating(ctx, st, "the adjacency matrix"));
    }
    return GCN_OK;
}

/* Replaces the device features with their bf16 copy, once: every step
 * reads the same tensor (GCNConv's cache of its first product knows it). */
static gcn_status features_to_bf16(gcn_ctx *ctx, gcn_trainer *tr)
{
    gcn_tensor *b = NULL;
    gcn_status st = gcn_cast(ctx, tr->dev.features, GCN_DTYPE_BF16, &b);
    if (st != GCN_OK)
        return gcn_trainer_allocating(ctx, st, "the features in bf16");
    gcn_tensor_free(&tr->dev.features);
    tr->dev.features = b;
    return GCN_OK;
}

/* gcn_trainer_create, and with rows (indexed by gcn_adjacency) one rank's
 * trainer of gcn_trainer_create_rank. */
static gcn_status trainer_build(gcn_ctx *ctx, gcn_trainer **out, const gcn_model_config *cfg,
                                const gcn_dataset *ds, const gcn_part_rows *const *rows)
{
    bool graphs = cfg->readout.enabled;
    if (cfg->bf16)
        GCN_TRY(gcn_spmm_check_dtype(ctx, GCN_DTYPE_BF16));
    if (!graphs)
        GCN_TRY(check_dataset(ctx, ds));
    else if (ds->n_graphs == 0 || ds->n_graph_classes < 2)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "dataset %s is not a labelled collection of "
                         "graphs: a model with a readout classifies graphs (tu:NAME)", ds->name);
    else if (rows)
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "a graph-level model trains on one rank: "
                         "its batches are whole graphs");
    gcn_status st = GCN_OK;
    gcn_trainer *tr = calloc(1, sizeof *tr);
    if (!tr)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    tr->ctx = ctx;
    tr->cfg = *cfg;
    tr->cfg.cuda_graph = cfg->cuda_graph && !rows; /* a rank's epoch waits for its peers */
    tr->validates = ds->n_valid > 0;
    tr->split_rows[0] = ds->n_train;
    tr->split_rows[1] = ds->n_valid;
    tr->split_rows[2] = ds->n_test;
    size_t mark = ctx->mem.in_use;
    st = gcn_model_create(ctx, &tr->model, cfg, ds->n_features,
                          graphs ? ds->n_graph_classes : ds->n_classes);
    GCN_CHECK(gcn_trainer_allocating(ctx, st, "the model's parameters"));
    tr->mem.params = ctx->mem.in_use - mark;
    mark = ctx->mem.in_use;
    GCN_CHECK(gcn_trainer_allocating(ctx, make_optimisers(ctx, tr), "the optimiser state"));
    tr->mem.optimizer = ctx->mem.in_use - mark;
    mark = ctx->mem.in_use;
    if (graphs) {
        GCN_CHECK(set_node_ids(ctx, NULL, 0, 0));
        tr->split_hash = gcn_trainer_split_hash(ds);
        st = gcn_graph_data_create(ctx, tr, ds);
        GCN_CHECK(gcn_trainer_allocating(ctx, st, "the graphs, their batches and labels"));
    } else {
        const gcn_part_rows *mine = !rows ? NULL : rows[GCN_ADJ_GCN] ? rows[GCN_ADJ_GCN]
                                                                      : rows[GCN_ADJ_RAW];
        st = mine ? set_node_ids(ctx, ds, mine->row0, mine->n_local)
                  : set_node_ids(ctx, ds, 0, ds->n_nodes);
        GCN_CHECK(gcn_trainer_allocating(ctx, st, "the nodes' ids"));
        st = mine ? gcn_rank_upload(ctx, tr, ds, mine) : gcn_dataset_upload(ctx, ds, &tr->dev);
        GCN_CHECK(gcn_trainer_allocating(ctx, st, "the dataset's features, labels and split"));
        if (cfg->bf16)
            GCN_CHECK(features_to_bf16(ctx, tr));
        st = gcn_model_set_sparse_input(ctx, tr->model, tr->dev.features, NULL);
        GCN_CHECK(gcn_trainer_allocating(ctx, st, "the features as a sparse matrix"));
        GCN_CHECK(make_matrices(ctx, tr, ds, rows));
    }
    tr->mem.data = ctx->mem.in_use - mark;
    tr->mem.grads = (size_t)gcn_model_param_count(tr->model) * sizeof(float);
    /* outside data: a few bytes every epoch writes */
    GCN_CHECK(gcn_mem_alloc(ctx, (void **)&tr->readout, sizeof *tr->readout));
    GCN_CHECK(gcn_trainer_keep_order(ctx, ds, &tr->position, &tr->order));
    GCN_CHECK(gcn_trainer_best_init(ctx, tr));
    *out = tr;
    return GCN_OK;
cleanup:
    gcn_trainer_free(&tr);
    return st;
}

gcn_status gcn_trainer_create(gcn_ctx *ctx, gcn_trainer **out, const gcn_model_config *cfg,
                              const gcn_dataset *ds)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out && cfg && ds);
    *out = NULL;
    return trainer_build(ctx, out, cfg, ds, NULL);
}

/* Both blocks, when given, must be the same rank's rows of one partition. */
static gcn_status check_rows(gcn_ctx *ctx, const gcn_dataset *ds, const gcn_part_rows *a,
                             const gcn_part_rows *b)
{
    const gcn_part_rows *r = a ? a : b;
    if (!r)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "trainer_create_rank: no matrix block given");
    if (r->n_ranks != gcn_ctx_ranks(ctx) || r->rank != gcn_ctx_rank(ctx))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "trainer_create_rank: the block is rank %d of %d, the context rank "
                         "%d of %d", r->rank, r->n_ranks, gcn_ctx_rank(ctx), gcn_ctx_ranks(ctx));
    if (a && b && (a->rank != b->rank || a->row0 != b->row0 || a->n_local != b->n_local))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "trainer_create_rank: the two blocks cover different rows");
    if ((int64_t)r->row0 + r->n_local > ds->n_nodes)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "trainer_create_rank: rows [%d, %d) are not rows of %s's %d nodes",
                         r->row0, r->row0 + r->n_local, ds->name, ds->n_nodes);
    return GCN_OK;
}

gcn_status gcn_trainer_create_rank(gcn_ctx *ctx, gcn_trainer **out, const gcn_model_config *cfg,
                                   const gcn_dataset *ds, const gcn_part_rows *gcn_rows,
                                   const gcn_part_rows *raw_rows)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out && cfg && ds);
    *out = NULL;
    GCN_TRY(check_rows(ctx, ds, gcn_rows, raw_rows));
    const gcn_part_rows *rows[2] = {[GCN_ADJ_GCN] = gcn_rows, [GCN_ADJ_RAW] = raw_rows};
    return trainer_build(ctx, out, cfg, ds, rows);
}

/* One training step; the loss stays on the device, for the epoch's one
 * read.  It ends by moving the device copy of the dropout offset on by the
 * step's draws (*draws), which a captured step then does on every replay. */
static gcn_status train_step(gcn_ctx *ctx, gcn_trainer *tr, gcn_tensor **loss, uint64_t *draws)
{
    gcn_status st;
    gcn_tensor *logits = NULL;
    for (int i = 0; i < tr->n_opt; i++)
        GCN_CHECK(gcn_optim_zero_grad(ctx, tr->opt[i]));
    GCN_CHECK(gcn_model_forward(ctx, tr->model, tr->adj_gcn, tr->adj_raw, tr->dev.features, true,
                                &logits));
    if (tr->rank)
        GCN_CHECK(gcn_rank_loss(ctx, tr, logits, loss));
    else
        GCN_CHECK(gcn_cross_entropy(ctx, logits, tr->dev.labels, tr->dev.train, loss));
    GCN_CHECK(gcn_backward(ctx, *loss));
    if (tr->rank)
        GCN_CHECK(gcn_rank_reduce_grads(ctx, tr));
    for (int i = 0; i < tr->n_opt; i++)
        GCN_CHECK(gcn_optim_step(ctx, tr->opt[i]));
    GCN_CHECK(gcn_rng_sync_device(ctx, draws));
cleanup:
    gcn_tape_clear(ctx);
    gcn_tensor_free(&logits);
    return st;
}

gcn_status gcn_trainer_eval_logits(gcn_ctx *ctx, gcn_trainer *tr, gcn_tensor **logits)
{
    if (tr->graphs)
        return gcn_graph_scores(ctx, tr, logits);
    bool prev = gcn_set_grad_enabled(ctx, false);
    gcn_status st = gcn_model_forward(ctx, tr->model, tr->adj_gcn, tr->adj_raw,
                                      tr->dev.features, false, logits);
    gcn_set_grad_enabled(ctx, prev);
    return st;
}

/* Queues the evaluation forward and the correct-row counts of the three
 * splits into the device readout. */
static gcn_status evaluate(gcn_ctx *ctx, gcn_trainer *tr, epoch_readout *dev)
{
    gcn_status st = GCN_OK;
    gcn_tensor *logits = NULL;
    const gcn_index *split[3] = {tr->dev.train, tr->dev.valid, tr->dev.test};
    GCN_CHECK(gcn_trainer_eval_logits(ctx, tr, &logits));
    if (tr->rank) /* a rank without rows of a split counts 0 for it (zero bits are 0.0) */
        GCN_CHECK(ctx->be->fill(ctx, (float *)dev->correct, 2 * 3, 0.0f));
    for (int i = 0; i < 3; i++)
        if (split[i])
            GCN_CHECK(gcn_count_correct(ctx, logits, tr->dev.labels, split[i],
                                        &dev->correct[i]));
    if (tr->rank)
        GCN_CHECK(gcn_comm_allreduce_f64(ctx, dev->correct, 3));
cleanup:
    gcn_tensor_free(&logits);
    return st;
}

/* Queues an epoch's device work without waiting: the step between stamps
 * 0 and 1, the evaluation, and the loss into the readout. */
static gcn_status queue_epoch(gcn_ctx *ctx, gcn_trainer *tr, uint64_t *draws)
{
    gcn_status st;
    gcn_tensor *loss = NULL;
    GCN_CHECK(gcn_ctx_stamp(ctx, 0));
    GCN_CHECK(train_step(ctx, tr, &loss, draws));
    GCN_CHECK(gcn_ctx_stamp(ctx, 1));
    GCN_CHECK(evaluate(ctx, tr, tr->readout));
    GCN_CHECK(ctx->be->copy(ctx, &tr->readout->loss, loss->data, sizeof tr->readout->loss));
    if (tr->rank)
        GCN_CHECK(gcn_comm_allreduce(ctx, &tr->readout->loss, 1));
cleanup:
    gcn_tensor_free(&loss);
    return st;
}

/* The host's counters a captured epoch moves without running anything: a
 * failed capture puts them back before the epoch runs launch by launch. */
typedef struct host_counters {
    uint64_t rng[GCN_RNG_N_STREAMS], rng_dev_synced;
    int64_t steps[GCN_MAX_OPTIMISERS];
} host_counters;

static void save_counters(const gcn_ctx *ctx, const gcn_trainer *tr, host_counters *c)
{
    gcn_rng_get_state(ctx, c->rng);
    c->rng_dev_synced = ctx->rng_dev_synced;
    for (int i = 0; i < tr->n_opt; i++)
        c->steps[i] = gcn_optim_steps(tr->opt[i]);
}

static gcn_status restore_counters(gcn_ctx *ctx, gcn_trainer *tr, const host_counters *c)
{
    gcn_rng_set_state(ctx, c->rng);
    ctx->rng_dev_synced = c->rng_dev_synced;
    for (int i = 0; i < tr->n_opt; i++)
        GCN_TRY(gcn_optim_set_steps(tr->opt[i], c->steps[i]));
    return GCN_OK;
}

/* Captures the epoch and launches the graph; when the capture fails, says
 * why, restores the counters and queues the epoch launch by launch. */
static gcn_status capture_epoch(gcn_ctx *ctx, gcn_trainer *tr, bool *captured)
{
    host_counters saved;
    uint64_t draws = 0;
    char why[sizeof ctx->err] = "";
    save_counters(ctx, tr, &saved);
    gcn_status st = gcn_cuda_capture_begin(ctx);
    if (st == GCN_OK) {
        st = queue_epoch(ctx, tr, &draws);
        if (st != GCN_OK) /* the first failure says why; ending the capture fails too */
            snprintf(why, sizeof why, "%s", gcn_last_error(ctx));
        gcn_status end = gcn_cuda_capture_end(ctx, st == GCN_OK, &tr->graph);
        st = st == GCN_OK ? end : st;
    }
    if (st == GCN_OK) {
        tr->graph_draws = draws;
        *captured = true;
        gcn_log(ctx, GCN_LOG_INFO, "epoch %d captured as a CUDA graph; later epochs replay it",
                tr->epoch + 1);
        return gcn_cuda_graph_launch(ctx, tr->graph);
    }
    gcn_log(ctx, GCN_LOG_WARN, "no CUDA graph: capturing epoch %d failed: %s; epochs run "
            "launch by launch", tr->epoch + 1, why[0] ? why : gcn_last_error(ctx));
    tr->graph_failed = true;
    GCN_TRY(restore_counters(ctx, tr, &saved));
    return queue_epoch(ctx, tr, &draws);
}

/* A replay: the host's counters move as the captured epoch moved them. */
static gcn_status replay_epoch(gcn_ctx *ctx, gcn_trainer *tr)
{
    gcn_rng_count_replayed(ctx, tr->graph_draws);
    for (int i = 0; i < tr->n_opt; i++)
        gcn_optim_count_replayed_step(tr->opt[i]);
    return gcn_cuda_graph_launch(ctx, tr->graph);
}

/* Queues the epoch: replayed, captured or launch by launch. */
static gcn_status run_epoch(gcn_ctx *ctx, gcn_trainer *tr, bool *graph)
{
    uint64_t draws;
    tr->locked_epochs = gcn_trainer_spmm_locked(tr) ? tr->locked_epochs + 1 : 0;
    bool graphs = ctx->device == GCN_DEVICE_CUDA && tr->cfg.cuda_graph && !tr->graph_failed &&
                  !ctx->profiling;
    if (!graphs && tr->graph) {
        /* launch-by-launch epochs reallocate what the graph writes in place
         * (the gradients): the graph goes, a later epoch may capture anew */
        gcn_cuda_graph_free(ctx, &tr->graph);
        tr->locked_epochs = 0;
    }
    *graph = graphs && (tr->graph || tr->locked_epochs >= LOCKED_EPOCHS_BEFORE_CAPTURE);
    if (!*graph)
        return queue_epoch(ctx, tr, &draws);
    if (tr->graph)
        return replay_epoch(ctx, tr);
    *graph = false;
    return capture_epoch(ctx, tr, graph);
}

static double fraction(double correct, int64_t rows)
{
    return rows > 0 ? correct / (double)rows : 0.0;
}

gcn_status gcn_trainer_accuracies(gcn_ctx *ctx, gcn_trainer *tr, double acc[3])
{
    if (tr->graphs)
        return gcn_graph_accuracies(ctx, tr, acc);
    epoch_readout host = {{0}, 0.0f};
    gcn_status st = evaluate(ctx, tr, tr->readout);
    GCN_TRY(gcn_trainer_allocating(ctx, st, "an evaluation's activations"));
    GCN_TRY(ctx->be->download(ctx, &host, tr->readout, sizeof host));
    acc[0] = fraction(host.correct[0], tr->split_rows[0]);
    acc[1] = fraction(host.correct[1], tr->split_rows[1]);
    acc[2] = fraction(host.correct[2], tr->split_rows[2]);
    return GCN_OK;
}

/* StepLR: epoch e (from 0) trains at lr gamma^floor(e / every), the powers
 * taken in double as PyTorch does; the optimisers hear of it only when it
 * changes (a resumed run sets it from its epoch). */
static gcn_status schedule_lr(gcn_trainer *tr)
{
    if (tr->cfg.lr_every <= 0)
        return GCN_OK;
    int k = tr->epoch / tr->cfg.lr_every;
    if (k == tr->lr_steps)
        return GCN_OK;
    double lr = tr->cfg.optim.lr;
    for (int i = 0; i < k; i++)
        lr *= (double)tr->cfg.lr_gamma;
    for (int o = 0; o < tr->n_opt; o++)
        GCN_TRY(gcn_optim_set_lr(tr->opt[o], (float)lr));
    tr->lr_steps = k;
    return GCN_OK;
}

gcn_status gcn_trainer_epoch(gcn_ctx *ctx, gcn_trainer *tr, gcn_epoch_stats *stats)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, tr && stats);
    *stats = (gcn_epoch_stats){.epoch = tr->epoch + 1};
    epoch_readout host = {{0}, 0.0f};
    GCN_TRY(schedule_lr(tr));
    double t0 = now_ms(), acc[3] = {0.0, 0.0, 0.0};
    gcn_status st = tr->graphs ? gcn_graph_epoch(ctx, tr, acc, &host.loss)
                               : run_epoch(ctx, tr, &stats->graph);
    if (st == GCN_ERR_NOMEM)
        return gcn_error_prefix(ctx, st, "allocating epoch %d's activations", tr->epoch + 1);
    GCN_TRY(st);
    if (!tr->graphs) {
        GCN_TRY(ctx->be->download(ctx, &host, tr->readout, sizeof host));
        acc[0] = fraction(host.correct[0], tr->split_rows[0]);
        acc[1] = fraction(host.correct[1], tr->split_rows[1]);
        acc[2] = fraction(host.correct[2], tr->split_rows[2]);
    }
    double t1 = now_ms();
    stats->loss = host.loss;
    if (!isfinite(stats->loss))
        return GCN_ERROR(ctx, GCN_ERR_NUMERIC, "non-finite training loss (%g) at epoch %d",
                         (double)stats->loss, tr->epoch + 1);
    GCN_TRY(gcn_ctx_stamp_ms(ctx, 0, 1, &stats->train_ms));
    stats->eval_ms = t1 - t0 - stats->train_ms;
    stats->train_acc = acc[0];
    stats->valid_acc = acc[1];
    stats->test_acc = acc[2];
    tr->epoch++;
    if (tr->best.epoch == 0 || !tr->validates || stats->valid_acc > tr->best.valid_acc) {
        tr->best = (gcn_train_best){tr->epoch, stats->train_acc, stats->valid_acc,
                                    stats->test_acc};
        GCN_TRY(gcn_trainer_keep_best(ctx, tr));
    }
    return GCN_OK;
}

void gcn_trainer_best(const gcn_trainer *tr, gcn_train_best *best)
{
    if (tr && best)
        *best = tr->best;
}

int gcn_trainer_epochs_done(const gcn_trainer *tr)
{
    return tr ? tr->epoch : 0;
}

const gcn_model *gcn_trainer_model(const gcn_trainer *tr)
{
    return tr ? tr->model : NULL;
}

bool gcn_trainer_spmm_locked(const gcn_trainer *tr)
{
    enum { MAX_SITES = 16 };
    gcn_spmm_site_info info[MAX_SITES];
    const gcn_csr *mats[2] = {tr ? tr->adj_gcn : NULL, tr ? tr->adj_raw : NULL};
    for (int m = 0; m < 2; m++) {
        int n = mats[m] ? gcn_spmm_sites(mats[m], info, MAX_SITES) : 0;
        for (int i = 0; i < n && i < MAX_SITES; i++)
            if (!info[i].locked && info[i].calls > 1) /* a one-off product never locks */
                return false;
    }
    return true;
}

void gcn_trainer_memory(const gcn_trainer *tr, gcn_train_memory *mem)
{
    if (tr && mem)
        *mem = tr->mem;
}

const gcn_csr *gcn_trainer_adjacency(const gcn_trainer *tr, gcn_adjacency kind)
{
    if (!tr)
        return NULL;
    return kind == GCN_ADJ_GCN ? tr->adj_gcn : kind == GCN_ADJ_RAW ? tr->adj_raw : NULL;
}

void gcn_trainer_free(gcn_trainer **ptr)
{
    if (!ptr || !*ptr)
        return;
    gcn_trainer *tr = *ptr;
    *ptr = NULL;
    if (tr->graph)
        gcn_cuda_graph_free(tr->ctx, &tr->graph);
    gcn_mem_release(tr->ctx, tr->readout, sizeof *tr->readout);
    for (int i = 0; i < tr->n_opt; i++)
        gcn_optim_free(&tr->opt[i]);
    gcn_model_free(&tr->model);
    gcn_csr_free(&tr->adj_gcn);
    gcn_csr_free(&tr->adj_raw);
    gcn_graph_data_free(tr->ctx, &tr->graphs);
    gcn_dataset_device_free(&tr->dev);
    gcn_rank_free(&tr->rank);
    free(tr->best_state);
    free(tr->state);
    free(tr->position);
    free(tr->order);
    gcn_order_slot_free(&tr->staged);
    free(tr);
}
