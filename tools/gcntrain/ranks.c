/* gcntrain on several ranks (--ranks N on one device, --gpus N over NCCL):
 * the partition, then each run's epochs on every rank at once, with the
 * same lines, log, checkpoints, predictions and summary as a run on one
 * context (run.c's paths, each step on every rank), or --eval-only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcntrain.h"

/* Prints how the graph was cut, and for each rank its own nodes, its halo
 * nodes and its stored entries, read from the blocks the trainers hold. */
static void print_partition(session *s, gcn_ranks *g, gcn_trainer **trainers)
{
    int n = gcn_ranks_count(g);
    const gcn_reorder *r = s->ds->reorder;
    printf("partition  %d ranks (%s), %s: %lld of %d stored entries cut (%.2f %%), computed "
           "in %.3f s%s\n", n, s->cfg.nccl ? "NCCL, one GPU each" : "local transport, one device",
           s->cfg.reorder[0] && strcmp(s->cfg.reorder, "auto") ? s->cfg.reorder : "by nodes",
           (long long)r->edge_cut, s->ds->graph->nnz,
           s->ds->graph->nnz ? 100.0 * (double)r->edge_cut / s->ds->graph->nnz : 0.0,
           r->seconds, r->from_cache ? " (cached)" : "");
    for (int k = 0; k < n; k++) {
        const gcn_csr *a = gcn_trainer_adjacency(trainers[k], GCN_ADJ_GCN);
        if (!a)
            a = gcn_trainer_adjacency(trainers[k], GCN_ADJ_RAW);
        printf("           rank %d: %d nodes, %d halo nodes, %d stored entries\n", k,
               gcn_csr_rows(a), gcn_csr_cols(a) - gcn_csr_rows(a), gcn_csr_nnz(a));
        log_line(&s->log, "{\"rank\":%d,\"nodes\":%d,\"halo_nodes\":%d,\"nnz\":%d}", k,
                 gcn_csr_rows(a), gcn_csr_cols(a) - gcn_csr_rows(a), gcn_csr_nnz(a));
    }
    fflush(stdout);
}

/* Prints one kind of collective per epoch: rank 0's calls, MiB and ms,
 * and the fewest and most ms that any rank spent on it. */
static void print_per_epoch(const char *what, int64_t calls, int64_t bytes, double ms,
                            double min_ms, double max_ms, int epochs)
{
    printf("           %-10s %6.4g calls %9.3f MiB %9.3f ms (ranks %.3f to %.3f ms)\n", what,
           (double)calls / epochs, (double)bytes / (1 << 20) / epochs, ms / epochs,
           min_ms / epochs, max_ms / epochs);
}

/* Prints rank 0's halo exchanges per epoch, for each layer that had any. */
static void print_layers(int epochs, const gcn_comm_stats *layers)
{
    for (int l = 1; l < GCN_COMM_MAX_LAYERS; l++)
        if (layers[l].exchange_calls > 0)
            printf("             layer %-2d %6.4g calls %9.3f MiB %9.3f ms\n", l,
                   (double)layers[l].exchange_calls / epochs,
                   (double)layers[l].exchange_bytes / (1 << 20) / epochs,
                   layers[l].exchange_ms / epochs);
}

/* Writes rank 0's traffic as a JSON array, one entry for each layer that
 * had any. */
static void layers_json(const gcn_comm_stats *layers, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int l = 0; l < GCN_COMM_MAX_LAYERS && used < size; l++) {
        const gcn_comm_stats *x = &layers[l];
        if (x->exchange_calls == 0 && x->allreduce_calls == 0)
            continue;
        used += (size_t)snprintf(buf + used, size - used,
                                 "%s{\"layer\":%d,\"exchange_calls\":%lld,\"exchange_bytes\":%lld,"
                                 "\"exchange_ms\":%.4f,\"allreduce_calls\":%lld,"
                                 "\"allreduce_bytes\":%lld,\"allreduce_ms\":%.4f}",
                                 used > 1 ? "," : "", l, (long long)x->exchange_calls,
                                 (long long)x->exchange_bytes, x->exchange_ms,
                                 (long long)x->allreduce_calls, (long long)x->allreduce_bytes,
                                 x->allreduce_ms);
    }
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

/* Prints what rank 0 sent and received: halo rows and all-reduced
 * buffers, in total and per epoch (`epochs` counts the epochs of every
 * run), with the time the transfers took.  Times are gcn_comm_stats's: on
 * the local transport the host time of the copies, over NCCL the device
 * time of the collectives including waits for other ranks.  Exchanges are
 * also broken down by layer. */
static void print_traffic(session *s, gcn_ranks *g, int epochs)
{
    gcn_comm_stats cs, rank, layers[GCN_COMM_MAX_LAYERS];
    double ex[2] = {INFINITY, 0.0}, ar[2] = {INFINITY, 0.0}; /* least, most */
    for (int k = 0; k < gcn_ranks_count(g); k++) {
        gcn_comm_get_stats(gcn_ranks_ctx(g, k), &rank);
        ex[0] = fmin(ex[0], rank.exchange_ms);
        ex[1] = fmax(ex[1], rank.exchange_ms);
        ar[0] = fmin(ar[0], rank.allreduce_ms);
        ar[1] = fmax(ar[1], rank.allreduce_ms);
    }
    gcn_comm_get_stats(gcn_ranks_ctx(g, 0), &cs);
    for (int l = 0; l < GCN_COMM_MAX_LAYERS; l++)
        gcn_comm_get_layer_stats(gcn_ranks_ctx(g, 0), l, &layers[l]);
    printf("traffic    rank 0 sent %.1f MiB of halo rows in %lld exchanges and all-reduced "
           "%.1f MiB in %lld calls over %d epoch%s\n", (double)cs.exchange_bytes / (1 << 20),
           (long long)cs.exchange_calls, (double)cs.allreduce_bytes / (1 << 20),
           (long long)cs.allreduce_calls, epochs,
           epochs == 1 ? "; per epoch:" : epochs > 1 ? "s; per epoch:" : "s");
    if (epochs > 0) {
        print_per_epoch("exchange", cs.exchange_calls, cs.exchange_bytes, cs.exchange_ms, ex[0],
                        ex[1], epochs);
        print_layers(epochs, layers);
        print_per_epoch("all-reduce", cs.allreduce_calls, cs.allreduce_bytes, cs.allreduce_ms,
                        ar[0], ar[1], epochs);
    }
    char per_layer[GCN_COMM_MAX_LAYERS * 200];
    layers_json(layers, per_layer, sizeof per_layer);
    log_line(&s->log, "{\"ranks\":%d,\"epochs\":%d,\"exchange_bytes\":%lld,"
             "\"exchange_calls\":%lld,\"exchange_ms\":%.4f,\"exchange_ms_min\":%.4f,"
             "\"exchange_ms_max\":%.4f,\"allreduce_bytes\":%lld,\"allreduce_calls\":%lld,"
             "\"allreduce_ms\":%.4f,\"allreduce_ms_min\":%.4f,\"allreduce_ms_max\":%.4f,"
             "\"layers\":%s}", gcn_ranks_count(g), epochs, (long long)cs.exchange_bytes,
             (long long)cs.exchange_calls, cs.exchange_ms, ex[0], ex[1],
             (long long)cs.allreduce_bytes, (long long)cs.allreduce_calls, cs.allreduce_ms, ar[0],
             ar[1], per_layer);
}

/* Each rank's peak memory on its device. */
static void print_rank_memory(session *s, gcn_ranks *g)
{
    char list[GCN_MAX_RANKS * 24] = "";
    size_t used = 0;
    printf("memory     peak per rank:");
    for (int k = 0; k < gcn_ranks_count(g); k++) {
        gcn_memory_stats ms;
        gcn_ctx_memory_stats(gcn_ranks_ctx(g, k), &ms);
        printf(" %.1f MiB%s", (double)ms.peak / (1 << 20), k + 1 < gcn_ranks_count(g) ? "," : "\n");
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%zu", k ? "," : "", ms.peak);
    }
    log_line(&s->log, "{\"rank_peak_bytes\":[%s]}", list);
}

/* What on_every_rank hands each rank's thread: the trainers, the step to
 * run on the rank's own trainer, and its argument. */
typedef struct rank_call {
    gcn_trainer **trainers;
    gcn_status (*fn)(gcn_ctx *, gcn_trainer *, void *);
    void *user;
} rank_call;

static gcn_status call_rank(gcn_ctx *ctx, int rank, void *user)
{
    rank_call *c = user;
    return c->fn(ctx, c->trainers[rank], c->user);
}

gcn_status on_every_rank(session *s, gcn_status (*fn)(gcn_ctx *, gcn_trainer *, void *),
                         void *user)
{
    rank_call c = {s->trainers, fn, user};
    return gcn_ranks_run(s->ctx, s->ranks, call_rank, &c);
}

/* Every rank's trainer from seed + run, in trainers (s->trainers). */
static int create_trainers(session *s, int run, gcn_trainer **trainers)
{
    gcn_ranks *g = s->ranks;
    double t0 = now_s();
    for (int k = 0; k < gcn_ranks_count(g); k++)
        gcn_rng_seed(gcn_ranks_ctx(g, k), s->cfg.seed + (uint64_t)run);
    gcn_status st = gcn_trainer_create_ranks(s->ctx, g, &s->cfg, s->ds, trainers);
    if (st != GCN_OK)
        return fail(s, st, PHASE_INPUT, "setup");
    s->trainers = trainers;
    s->t_prep += now_s() - t0;
    return 0;
}

/* One run: every rank's trainer from seed + run (the first resumed from
 * --resume), its epochs (counted into *epochs), its best. */
static int ranks_run(session *s, int run, int *epochs)
{
    gcn_ranks *g = s->ranks;
    int n = gcn_ranks_count(g), rc = 0;
    gcn_trainer *trainers[GCN_MAX_RANKS] = {NULL};
    if ((rc = create_trainers(s, run, trainers)))
        return rc;
    s->spmm_reported = false;
    if (run == 0 && s->a.resume && (rc = resume(s, trainers[0])))
        goto done;
    if (run == 0 && (rc = export_data(s)))
        goto done;
    if (run == 0) {
        print_partition(s, g, trainers);
        printf("params     %lld\n",
               (long long)gcn_model_param_count(gcn_trainer_model(trainers[0])));
    }
    bool from_file = false;
    gcn_status st = load_choices(s, trainers[0], &from_file);
    if (st != GCN_OK) {
        rc = fail(s, st, PHASE_INPUT, "spmm plan");
        goto done;
    }
    int first = gcn_trainer_epochs_done(trainers[0]);
    rc = train_epochs(s, run, trainers[0], from_file);
    *epochs += gcn_trainer_epochs_done(trainers[0]) - first;
    if (rc)
        goto done;
    gcn_train_best b;
    gcn_trainer_best(trainers[0], &b);
    finish_run(s, run, &b, gcn_trainer_epochs_done(trainers[0]));
    if (!s->stop)
        rc = keep_predictions(s, trainers[0], &b);
done:
    s->trainers = NULL;
    for (int k = 0; k < n; k++)
        gcn_trainer_free(&trainers[k]);
    return rc;
}

/* --eval-only on the ranks. */
static int ranks_eval(session *s)
{
    gcn_trainer *trainers[GCN_MAX_RANKS] = {NULL};
    int rc = create_trainers(s, 0, trainers);
    if (!rc)
        rc = eval_trainer(s, trainers[0]);
    s->trainers = NULL;
    for (int k = 0; k < gcn_ranks_count(s->ranks); k++)
        gcn_trainer_free(&trainers[k]);
    return rc;
}

int check_gpus(session *s)
{
    gcn_ctx_opts opts = gcn_ctx_default_opts(), *o = &opts;
    int have = gcn_cuda_device_count();
    if (!s->cfg.nccl)
        return 0;
    gcn_model_config_ctx_opts(&s->cfg, o);
    if (gcn_ctx_device(s->ctx) != GCN_DEVICE_CUDA) {
        fprintf(stderr, "gcntrain: --gpus %d: the device is %s; one rank per GPU needs CUDA "
                "devices (--ranks N runs N ranks on one device)\n", s->cfg.ranks,
                gcn_device_name(gcn_ctx_device(s->ctx)));
        return EXIT_INPUT;
    }
    if (o->device_index + s->cfg.ranks > have) {
        fprintf(stderr, "gcntrain: --gpus %d: needs GPUs cuda:%d to cuda:%d; this machine has "
                "%d\n", s->cfg.ranks, o->device_index, o->device_index + s->cfg.ranks - 1, have);
        return EXIT_INPUT;
    }
    return 0;
}

int train_ranks(session *s)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    gcn_ranks *g = NULL;
    int rc = 0, epochs = 0;
    gcn_model_config_ctx_opts(&s->cfg, &o);
    o.device = gcn_ctx_device(s->ctx); /* as resolved, once */
    o.log_level = s->a.quiet ? GCN_LOG_WARN : GCN_LOG_INFO;
    o.log_fn = gcntrain_log;
    o.temp_fn = signals_temp;
    gcn_status st = gcn_ranks_create(s->ctx, &g, s->cfg.ranks,
                                     s->cfg.nccl ? GCN_COMM_NCCL : GCN_COMM_LOCAL, &o);
    if (st != GCN_OK)
        return fail(s, st, PHASE_INPUT, "ranks");
    for (int k = 0; k < s->cfg.ranks && st == GCN_OK; k++)
        st = gcn_spmm_set_kernel(gcn_ranks_ctx(g, k), s->cfg.spmm);
    if (st != GCN_OK) {
        rc = fail(s, st, PHASE_INPUT, "spmm");
        goto done;
    }
    s->ranks = g;
    if (s->a.eval_only) {
        rc = ranks_eval(s);
        goto done;
    }
    for (int r = 0; r < s->cfg.runs && rc == 0 && !(s->stop = signals_pending()); r++)
        rc = ranks_run(s, r, &epochs);
    if (rc)
        goto done;
    print_traffic(s, g, epochs);
    print_rank_memory(s, g);
    print_results(s);
    if (s->stop)
        rc = 128 + s->stop;
    else if (s->a.predict)
        rc = write_predictions(s);
done:
    s->ranks = NULL;
    gcn_ranks_free(&g);
    return rc;
}
