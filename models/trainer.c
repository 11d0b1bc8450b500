/* The training loop: one epoch is forward, loss on the training rows,
 * backward, optimiser step, then an evaluation forward without the tape. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "../core/internal.h"
#include "../kernels/spmm.h"
#include "trainer_impl.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static gcn_status check_dataset(gcn_ctx *ctx, const gcn_dataset *ds)
{
    if (!ds->features || ds->n_features < 1)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "dataset %s has no node features; substitute some with "
                         "--features random:D or --features degree", ds->name);
    if (!ds->labels || ds->n_classes < 2)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "dataset %s has no class labels", ds->name);
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

gcn_status gcn_trainer_create(gcn_ctx *ctx, gcn_trainer **out, const gcn_model_config *cfg,
                              const gcn_dataset *ds)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out && cfg && ds);
    *out = NULL;
    GCN_TRY(check_dataset(ctx, ds));
    gcn_status st = GCN_OK;
    gcn_trainer *tr = calloc(1, sizeof *tr);
    if (!tr)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "trainer: out of host memory");
    tr->cfg = *cfg;
    GCN_CHECK(gcn_model_create(ctx, &tr->model, cfg, ds->n_features, ds->n_classes));
    GCN_CHECK(make_optimisers(ctx, tr));
    GCN_CHECK(gcn_dataset_upload(ctx, ds, &tr->dev));
    if (gcn_model_uses_gcn_adj(tr->model))
        GCN_CHECK(gcn_dataset_adjacency(ctx, ds, GCN_ADJ_GCN, &tr->adj_gcn));
    if (gcn_model_uses_raw_adj(tr->model))
        GCN_CHECK(gcn_dataset_adjacency(ctx, ds, GCN_ADJ_RAW, &tr->adj_raw));
    *out = tr;
    return GCN_OK;
cleanup:
    gcn_trainer_free(&tr);
    return st;
}

static gcn_status train_step(gcn_ctx *ctx, gcn_trainer *tr, float *loss_value)
{
    gcn_status st;
    gcn_tensor *logits = NULL, *logp = NULL, *loss = NULL;
    for (int i = 0; i < tr->n_opt; i++)
        GCN_CHECK(gcn_optim_zero_grad(ctx, tr->opt[i]));
    GCN_CHECK(gcn_model_forward(ctx, tr->model, tr->adj_gcn, tr->adj_raw, tr->dev.features, true,
                                &logits));
    GCN_CHECK(gcn_log_softmax(ctx, logits, &logp));
    GCN_CHECK(gcn_nll_loss(ctx, logp, tr->dev.labels, tr->dev.train, &loss));
    GCN_CHECK(gcn_tensor_to_host(ctx, loss, loss_value));
    if (!isfinite(*loss_value)) {
        st = GCN_ERROR(ctx, GCN_ERR_NUMERIC, "non-finite training loss (%g) at epoch %d",
                       (double)*loss_value, tr->epoch + 1);
        goto cleanup;
    }
    GCN_CHECK(gcn_backward(ctx, loss));
    for (int i = 0; i < tr->n_opt; i++)
        GCN_CHECK(gcn_optim_step(ctx, tr->opt[i]));
cleanup:
    gcn_tape_clear(ctx);
    gcn_tensor_free(&logits);
    gcn_tensor_free(&logp);
    gcn_tensor_free(&loss);
    return st;
}

static gcn_status split_accuracy(gcn_ctx *ctx, const gcn_tensor *logits, const gcn_index *labels,
                                 const gcn_index *rows, double *acc)
{
    *acc = 0.0;
    return rows ? gcn_accuracy(ctx, logits, labels, rows, acc) : GCN_OK;
}

static gcn_status evaluate(gcn_ctx *ctx, gcn_trainer *tr, gcn_epoch_stats *s)
{
    gcn_status st = GCN_OK;
    gcn_tensor *logits = NULL;
    bool prev = gcn_set_grad_enabled(ctx, false);
    GCN_CHECK(gcn_model_forward(ctx, tr->model, tr->adj_gcn, tr->adj_raw, tr->dev.features,
                                false, &logits));
    GCN_CHECK(split_accuracy(ctx, logits, tr->dev.labels, tr->dev.train, &s->train_acc));
    GCN_CHECK(split_accuracy(ctx, logits, tr->dev.labels, tr->dev.valid, &s->valid_acc));
    GCN_CHECK(split_accuracy(ctx, logits, tr->dev.labels, tr->dev.test, &s->test_acc));
cleanup:
    gcn_set_grad_enabled(ctx, prev);
    gcn_tensor_free(&logits);
    return st;
}

gcn_status gcn_trainer_epoch(gcn_ctx *ctx, gcn_trainer *tr, gcn_epoch_stats *stats)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, tr && stats);
    *stats = (gcn_epoch_stats){.epoch = tr->epoch + 1};
    double t0 = now_ms();
    GCN_TRY(train_step(ctx, tr, &stats->loss));
    GCN_TRY(gcn_ctx_sync(ctx));
    double t1 = now_ms();
    GCN_TRY(evaluate(ctx, tr, stats));
    GCN_TRY(gcn_ctx_sync(ctx));
    stats->train_ms = t1 - t0;
    stats->eval_ms = now_ms() - t1;
    tr->epoch++;
    if (tr->best.epoch == 0 || stats->valid_acc > tr->best.valid_acc)
        tr->best = (gcn_train_best){tr->epoch, stats->train_acc, stats->valid_acc,
                                    stats->test_acc};
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
    for (int i = 0; i < tr->n_opt; i++)
        gcn_optim_free(&tr->opt[i]);
    gcn_model_free(&tr->model);
    gcn_csr_free(&tr->adj_gcn);
    gcn_csr_free(&tr->adj_raw);
    gcn_dataset_device_free(&tr->dev);
    free(tr);
}
