/* gcntrain on several ranks (--ranks N on one device, --gpus N over NCCL):
 * the partition, then each run's epochs on every rank at once, with the
 * same lines, log and summary as a run on one context. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gcntrain.h"

/* Each rank's rows, halo and the edges cut, from the blocks the trainers
 * hold. */
static void print_partition(session *s, gcn_ranks *g, gcn_trainer **trainers)
{
    int n = gcn_ranks_count(g);
    const gcn_reorder *r = s->ds->reorder;
    printf("partition  %d ranks (%s), %s: %lld of %d stored entries cut (%.2f %%), METIS "
           "%.3f s%s\n", n, s->cfg.nccl ? "NCCL, one GPU each" : "local transport, one device",
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

/* One kind of collective per epoch: rank 0's calls, MiB and host ms, and
 * the ms of the slowest rank (the most in all); ms NaN: not measured. */
static void print_per_epoch(const char *what, int64_t calls, int64_t bytes, double ms,
                            double max_ms, int epochs)
{
    printf("           %-10s %6.4g calls %9.3f MiB", what, (double)calls / epochs,
           (double)bytes / (1 << 20) / epochs);
    if (!isnan(ms))
        printf(" %9.3f ms (slowest rank %.3f ms)\n", ms / epochs, max_ms / epochs);
    else
        printf("  (time not measured over NCCL)\n");
}

/* What rank 0 moved, halo rows and all-reduced buffers, in all and per
 * epoch (epochs: those trained over every run), with the host time of the
 * local transport's copies (gcn_comm_stats; null in the log over NCCL). */
static void print_traffic(session *s, gcn_ranks *g, int epochs)
{
    gcn_comm_stats cs, rank;
    double max_exchange = 0.0, max_allreduce = 0.0;
    for (int k = 0; k < gcn_ranks_count(g); k++) {
        gcn_comm_get_stats(gcn_ranks_ctx(g, k), &rank);
        max_exchange = fmax(max_exchange, rank.exchange_ms);
        max_allreduce = fmax(max_allreduce, rank.allreduce_ms);
    }
    gcn_comm_get_stats(gcn_ranks_ctx(g, 0), &cs);
    if (s->cfg.nccl) /* not measured */
        cs.exchange_ms = cs.allreduce_ms = max_exchange = max_allreduce = NAN;
    printf("traffic    rank 0 sent %.1f MiB of halo rows in %lld exchanges and all-reduced "
           "%.1f MiB in %lld calls over %d epoch%s\n", (double)cs.exchange_bytes / (1 << 20),
           (long long)cs.exchange_calls, (double)cs.allreduce_bytes / (1 << 20),
           (long long)cs.allreduce_calls, epochs,
           epochs == 1 ? "; per epoch:" : epochs > 1 ? "s; per epoch:" : "s");
    if (epochs > 0) {
        print_per_epoch("exchange", cs.exchange_calls, cs.exchange_bytes, cs.exchange_ms,
                        max_exchange, epochs);
        print_per_epoch("all-reduce", cs.allreduce_calls, cs.allreduce_bytes, cs.allreduce_ms,
                        max_allreduce, epochs);
    }
    char ems[32], ems_max[32], ams[32], ams_max[32];
    log_line(&s->log, "{\"ranks\":%d,\"epochs\":%d,\"exchange_bytes\":%lld,"
             "\"exchange_calls\":%lld,\"exchange_ms\":%s,\"exchange_ms_max\":%s,"
             "\"allreduce_bytes\":%lld,\"allreduce_calls\":%lld,\"allreduce_ms\":%s,"
             "\"allreduce_ms_max\":%s}", gcn_ranks_count(g), epochs,
             (long long)cs.exchange_bytes, (long long)cs.exchange_calls,
             json_number(ems, sizeof ems, "%.4f", cs.exchange_ms),
             json_number(ems_max, sizeof ems_max, "%.4f", max_exchange),
             (long long)cs.allreduce_bytes, (long long)cs.allreduce_calls,
             json_number(ams, sizeof ams, "%.4f", cs.allreduce_ms),
             json_number(ams_max, sizeof ams_max, "%.4f", max_allreduce));
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

/* One run: every rank's trainer from seed + run, its epochs (counted into
 * *epochs), its best. */
static int ranks_run(session *s, gcn_ranks *g, int run, int *epochs)
{
    int n = gcn_ranks_count(g), rc = 0;
    gcn_trainer *trainers[GCN_MAX_RANKS] = {NULL};
    gcn_status st;
    double t0 = now_s();
    for (int k = 0; k < n; k++)
        gcn_rng_seed(gcn_ranks_ctx(g, k), s->cfg.seed + (uint64_t)run);
    if ((st = gcn_trainer_create_ranks(s->ctx, g, &s->cfg, s->ds, trainers)) != GCN_OK)
        return fail(s, st, PHASE_INPUT, "setup");
    s->t_prep += now_s() - t0;
    s->spmm_reported = false;
    if (run == 0) {
        print_partition(s, g, trainers);
        printf("params     %lld\n",
               (long long)gcn_model_param_count(gcn_trainer_model(trainers[0])));
    }
    for (int e = 0; e < s->cfg.epochs; e++) {
        if ((s->stop = signals_pending()))
            break;
        gcn_epoch_stats es;
        if ((st = gcn_trainer_epoch_ranks(s->ctx, g, trainers, &es)) != GCN_OK) {
            rc = fail(s, st, PHASE_TRAIN, "training");
            goto done;
        }
        (*epochs)++;
        s->t_train += es.train_ms * 1e-3;
        s->t_eval += es.eval_ms * 1e-3;
        log_epoch(s, run, &es);
        if (!log_ok(&s->log)) {
            rc = EXIT_RUNTIME;
            goto done;
        }
        if (!s->spmm_reported)
            s->spmm_reported = report_spmm(s, run, trainers[0]);
    }
    gcn_train_best b;
    gcn_trainer_best(trainers[0], &b);
    finish_run(s, run, &b, gcn_trainer_epochs_done(trainers[0]));
done:
    for (int k = 0; k < n; k++)
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
    for (int r = 0; r < s->cfg.runs && rc == 0 && !(s->stop = signals_pending()); r++)
        rc = ranks_run(s, g, r, &epochs);
    if (rc)
        goto done;
    print_traffic(s, g, epochs);
    print_rank_memory(s, g);
    s->ranks = g;
    print_results(s);
    s->ranks = NULL;
    if (s->stop)
        rc = 128 + s->stop;
done:
    gcn_ranks_free(&g);
    return rc;
}
