/* gcnbench train on several ranks (--ranks N, --gpus N): the epochs of
 * every rank's trainer, and each rank's peak and traffic per timed epoch,
 * by layer, in the JSON line. */
#include <stdlib.h>

#include "train.h"

/* The ranks' traffic so far, each rank's and each layer's. */
static void comm_snapshot(gcn_ranks *g, rank_measured *out)
{
    for (int k = 0; k < gcn_ranks_count(g); k++) {
        gcn_comm_get_stats(gcn_ranks_ctx(g, k), &out[k].comm);
        for (int l = 0; l < GCN_COMM_MAX_LAYERS; l++)
            gcn_comm_get_layer_stats(gcn_ranks_ctx(g, k), l, &out[k].layer[l]);
    }
}

/* a -= b, field by field. */
static void comm_sub(gcn_comm_stats *a, const gcn_comm_stats *b)
{
    a->allreduce_calls -= b->allreduce_calls;
    a->allreduce_bytes -= b->allreduce_bytes;
    a->exchange_calls -= b->exchange_calls;
    a->exchange_bytes -= b->exchange_bytes;
    a->allreduce_ms -= b->allreduce_ms;
    a->exchange_ms -= b->exchange_ms;
}

static bool all_locked(gcn_trainer **trainers, int n)
{
    for (int k = 0; k < n; k++)
        if (!gcn_trainer_spmm_locked(trainers[k]))
            return false;
    return true;
}

/* Runs the epochs on every rank, warm-up then timed, and records the
 * traffic of the timed ones.  The caller makes the trainers. */
static gcn_status rank_epochs(train_bench *b, gcn_ranks *g, gcn_trainer **trainers, measured *m)
{
    int n = gcn_ranks_count(g);
    gcn_epoch_stats es;
    gcn_status st = GCN_OK;
    for (m->warmup = 0; st == GCN_OK && (m->warmup < b->o.warmup ||
                                         (!all_locked(trainers, n) &&
                                          m->warmup < b->o.warmup + MAX_EXTRA_WARMUP));
         m->warmup++)
        st = gcn_trainer_epoch_ranks(b->ctx, g, trainers, &es);
    rank_measured before[GCN_MAX_RANKS];
    comm_snapshot(g, before);
    for (int e = 0; e < b->o.epochs && st == GCN_OK; e++) {
        st = gcn_trainer_epoch_ranks(b->ctx, g, trainers, &es);
        m->train_ms[e] = (float)es.train_ms;
        m->eval_ms[e] = (float)es.eval_ms;
        m->epoch_ms[e] = (float)(es.train_ms + es.eval_ms);
    }
    if (st != GCN_OK)
        return st;
    comm_snapshot(g, m->rank);
    for (int k = 0; k < n; k++) {
        gcn_memory_stats ms;
        gcn_ctx_memory_stats(gcn_ranks_ctx(g, k), &ms);
        m->rank[k].peak = ms.peak;
        if (k == 0) {
            m->peak = m->peak_timed = ms.peak;
            m->steady = ms.in_use;
        }
        comm_sub(&m->rank[k].comm, &before[k].comm);
        for (int l = 0; l < GCN_COMM_MAX_LAYERS; l++)
            comm_sub(&m->rank[k].layer[l], &before[k].layer[l]);
    }
    gcn_trainer_memory(trainers[0], &m->mem);
    gcn_trainer_best(trainers[0], &m->best);
    return GCN_OK;
}

/* run_dataset on the configuration's ranks: reorders the dataset by its
 * partition and trains one trainer per rank. */
int train_run_ranks(train_bench *b, const char *spec, measured *m)
{
    gcn_dataset *ds = NULL;
    gcn_ranks *g = NULL;
    gcn_trainer *trainers[GCN_MAX_RANKS] = {NULL};
    int rc = 0, n = b->cfg.ranks;
    gcn_ctx_opts o = gcn_ctx_default_opts();
    gcn_model_config_ctx_opts(&b->cfg, &o);
    o.device = gcn_ctx_device(b->ctx);
    o.log_fn = gcnbench_log;
    gcn_status st = gcn_model_config_load_dataset(b->ctx, &b->cfg, spec, &ds);
    if (st != GCN_OK) {
        fprintf(stderr, "gcnbench train: %s: %s\n", spec, gcn_last_error(b->ctx));
        return st == GCN_ERR_NOMEM ? EXIT_RUNTIME : EXIT_INPUT;
    }
    snprintf(m->dataset, sizeof m->dataset, "%s", ds->name);
    train_sources(ds, m);
    m->n_ranks = n;
    m->n_nodes = ds->n_nodes;
    st = gcn_ranks_create(b->ctx, &g, n, b->cfg.nccl ? GCN_COMM_NCCL : GCN_COMM_LOCAL, &o);
    for (int k = 0; k < n && st == GCN_OK; k++) {
        st = gcn_spmm_set_kernel(gcn_ranks_ctx(g, k), b->cfg.spmm);
        gcn_rng_seed(gcn_ranks_ctx(g, k), b->cfg.seed);
    }
    if (st == GCN_OK)
        st = gcn_trainer_create_ranks(b->ctx, g, &b->cfg, ds, trainers);
    if (st != GCN_OK) {
        fprintf(stderr, "gcnbench train: %s: %s\n", spec, gcn_last_error(b->ctx));
        rc = st == GCN_ERR_NOMEM || st == GCN_ERR_CUDA ? EXIT_RUNTIME : EXIT_INPUT;
        goto done;
    }
    for (int k = 0; k < n; k++) {
        const gcn_csr *adj = gcn_trainer_adjacency(trainers[k], GCN_ADJ_GCN);
        adj = adj ? adj : gcn_trainer_adjacency(trainers[k], GCN_ADJ_RAW);
        m->nnz += adj ? gcn_csr_nnz(adj) : 0;
    }
    m->sparse_nnz = -1;
    if ((st = rank_epochs(b, g, trainers, m)) != GCN_OK) {
        fprintf(stderr, "gcnbench train: %s: %s\n", spec, gcn_last_error(b->ctx));
        rc = EXIT_RUNTIME;
    }
done:
    for (int k = 0; k < n; k++)
        gcn_trainer_free(&trainers[k]);
    gcn_ranks_free(&g);
    gcn_dataset_free(&ds);
    return rc;
}

/* Writes ",\"name\":[v_0,...]": each rank's value of the per-epoch figure
 * that fn computes. */
static void rank_array(FILE *f, const char *name, const measured *m, int epochs,
                       double (*fn)(const measured *m, int k, int epochs))
{
    fprintf(f, ",\"%s\":[", name);
    for (int k = 0; k < m->n_ranks; k++)
        fprintf(f, "%s%.6g", k ? "," : "", fn(m, k, epochs));
    fputc(']', f);
}

static double exchange_mib(const measured *m, int k, int epochs)
{
    return train_mib((double)m->rank[k].comm.exchange_bytes) / epochs;
}

static double exchange_ms(const measured *m, int k, int epochs)
{
    return m->rank[k].comm.exchange_ms / epochs;
}

static double allreduce_mib(const measured *m, int k, int epochs)
{
    return train_mib((double)m->rank[k].comm.allreduce_bytes) / epochs;
}

static double allreduce_ms(const measured *m, int k, int epochs)
{
    return m->rank[k].comm.allreduce_ms / epochs;
}

/* The median epoch less the rank's time in collectives. */
static double compute_ms(const measured *m, int k, int epochs)
{
    double med, min;
    gcnbench_stats(m->epoch_ms, epochs, &med, &min);
    return med - exchange_ms(m, k, epochs) - allreduce_ms(m, k, epochs);
}

/* Writes the multi-rank keys: the ranks, their peaks and their traffic per
 * timed epoch (null values for a run on one context). */
void train_write_comm(const train_bench *b, const measured *m, FILE *f)
{
    int epochs = (int)b->o.epochs;
    fprintf(f, ",\"ranks\":%d", m->n_ranks);
    if (m->n_ranks == 1) {
        fputs(",\"transport\":null,\"rank_peak_mib\":null,\"comm\":null", f);
        return;
    }
    fprintf(f, ",\"transport\":\"%s\",\"rank_peak_mib\":[", b->cfg.nccl ? "nccl" : "local");
    for (int k = 0; k < m->n_ranks; k++)
        fprintf(f, "%s%.6g", k ? "," : "", train_mib((double)m->rank[k].peak));
    fputs("],\"comm\":{", f);
    fprintf(f, "\"epochs\":%d", epochs);
    rank_array(f, "exchange_mib", m, epochs, exchange_mib);
    rank_array(f, "exchange_ms", m, epochs, exchange_ms);
    rank_array(f, "allreduce_mib", m, epochs, allreduce_mib);
    rank_array(f, "allreduce_ms", m, epochs, allreduce_ms);
    rank_array(f, "compute_ms", m, epochs, compute_ms);
    fputs(",\"layers\":[", f);
    bool first = true;
    for (int l = 1; l < GCN_COMM_MAX_LAYERS; l++) {
        if (m->rank[0].layer[l].exchange_calls == 0)
            continue;
        fprintf(f, "%s{\"layer\":%d,\"calls\":%.6g,\"halo_mib\":[", first ? "" : ",", l,
                (double)m->rank[0].layer[l].exchange_calls / epochs);
        for (int k = 0; k < m->n_ranks; k++)
            fprintf(f, "%s%.6g", k ? "," : "",
                    train_mib((double)m->rank[k].layer[l].exchange_bytes) / epochs);
        fputs("],\"exchange_ms\":[", f);
        for (int k = 0; k < m->n_ranks; k++)
            fprintf(f, "%s%.6g", k ? "," : "", m->rank[k].layer[l].exchange_ms / epochs);
        fputs("]}", f);
        first = false;
    }
    fputs("]}", f);
}

