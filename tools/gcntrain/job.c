/* gcntrain as one rank process of a job (--rendezvous FILE): its rank from
 * the launcher's environment, its GPU, the rendezvous and NCCL, the
 * dataset loaded by rank 0 first (so that the partition is computed once
 * and the others read it from the cache), its rank's trainer (run.c trains
 * it), the flags its ranks agree on, rank 0's lines on every rank's
 * numbers, and a clean stop when a peer fails. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gcntrain.h"

/* How long a rank that gave a peer up waits for its own thread to stop
 * before it exits anyway. */
enum { STOP_GRACE_S = 10 };

typedef struct peer_failure {
    int rank, self;
    char why[384];
} peer_failure;

static void *exit_after_grace(void *arg)
{
    peer_failure *f = arg;
    struct timespec t = {STOP_GRACE_S, 0};
    nanosleep(&t, NULL);
    fprintf(stderr, "gcntrain: rank %d failed: %s (rank %d exits %d s after it)\n", f->rank,
            f->why, f->self, STOP_GRACE_S);
    _exit(EXIT_RUNTIME);
}

/* The watcher gave a peer up and stopped the communicator, which releases
 * this rank's collectives; should the rank stay stuck anyway, it exits
 * after a grace period. */
static void peer_failed(int rank, const char *why, void *user)
{
    session *s = user;
    static peer_failure f;
    f.rank = rank;
    f.self = s->job.rank;
    snprintf(f.why, sizeof f.why, "%s", why);
    pthread_t t;
    if (pthread_create(&t, NULL, exit_after_grace, &f) == 0)
        pthread_detach(t);
}

int job_begin(session *s)
{
    char err[512];
    gcn_status st = gcn_job_from_env(NULL, &s->job, err, sizeof err);
    if (st != GCN_OK) {
        fprintf(stderr, "gcntrain: --rendezvous %s: %s\n", s->a.rendezvous, err);
        return EXIT_INPUT;
    }
    int gpus = gcn_cuda_device_count();
    if (gpus <= 0) {
        fprintf(stderr, "gcntrain: --rendezvous %s: rank %d of %d needs a GPU; this machine "
                "has none\n", s->a.rendezvous, s->job.rank, s->job.ranks);
        return EXIT_INPUT;
    }
    char device[32], ranks[16];
    snprintf(device, sizeof device, "cuda:%d", s->job.local_rank % gpus);
    snprintf(ranks, sizeof ranks, "%d", s->job.ranks);
    if (gcn_model_config_set(&s->cfg, "device", device, err, sizeof err) != GCN_OK ||
        gcn_model_config_set(&s->cfg, "devices", ranks, err, sizeof err) != GCN_OK) {
        fprintf(stderr, "gcntrain: --rendezvous: %s\n", err);
        return EXIT_INPUT;
    }
    if (s->job.rank > 0) { /* rank 0 alone prints and logs the run */
        s->a.log = NULL;
        s->log.path = NULL;
        if (!freopen("/dev/null", "w", stdout)) {
            fprintf(stderr, "gcntrain: rank %d: cannot silence stdout\n", s->job.rank);
            return EXIT_RUNTIME;
        }
    }
    return 0;
}

int job_join(session *s)
{
    gcn_comm_id id;
    gcn_status st = GCN_OK;
    if (s->job.rank == 0 && (st = gcn_comm_new_id(s->ctx, &id)) != GCN_OK)
        return fail(s, st, PHASE_INPUT, "NCCL");
    gcn_rendezvous_opts o = gcn_rendezvous_default_opts();
    o.timeout_s = s->a.rank_timeout > 0 ? (double)s->a.rank_timeout : 60.0;
    o.on_failure = peer_failed;
    o.user = s;
    if ((st = gcn_rendezvous_open(s->ctx, s->a.rendezvous, &s->job, &o, &id, &s->rdv)) != GCN_OK)
        return fail(s, st, PHASE_INPUT, "job");
    if ((st = gcn_comm_join(s->ctx, s->job.rank, s->job.ranks, &id)) != GCN_OK)
        return fail(s, st, PHASE_TRAIN, "NCCL");
    gcn_rendezvous_attach(s->rdv, s->ctx);
    fprintf(stderr, "gcntrain: rank %d of %d (%s) on cuda:%d joined %s\n", s->job.rank,
            s->job.ranks, gcn_launcher_name(s->job.launcher),
            s->job.local_rank % gcn_cuda_device_count(), s->a.rendezvous);
    return 0;
}

int job_peer_failed(session *s, gcn_status st)
{
    char why[384];
    int peer = gcn_rendezvous_failed(s->rdv, why, sizeof why);
    bool from_comm = st == GCN_ERR_STATE ||
                     (st == GCN_ERR_CUDA && strstr(gcn_last_error(s->ctx), "nccl"));
    if (peer < 0 && from_comm)
        peer = gcn_rendezvous_wait_failed(s->rdv, why, sizeof why);
    if (peer < 0)
        return 0;
    snprintf(s->error, sizeof s->error, "rank %d failed: %s", peer, why);
    fprintf(stderr, "gcntrain: %s (rank %d stops)\n", s->error, s->job.rank);
    return EXIT_RUNTIME;
}

int job_load_turn(session *s, bool before)
{
    if (!s->rdv || (s->job.rank == 0) == before)
        return 0;
    gcn_status st = gcn_comm_barrier(s->ctx);
    return st == GCN_OK ? 0 : fail(s, st, PHASE_INPUT, "waiting for rank 0's dataset");
}

/* Every rank's numbers gathered on every rank: rank r fills its slots
 * [r * per, (r + 1) * per) of out[ranks * per], the rest 0, and the sum
 * over the ranks is taken in double. */
static gcn_status gather(session *s, const double *mine, int per, double *out)
{
    int n = s->job.ranks;
    gcn_tensor *t = NULL;
    memset(out, 0, (size_t)(n * per) * sizeof *out);
    memcpy(out + s->job.rank * per, mine, (size_t)per * sizeof *out);
    gcn_status st = gcn_tensor_from_host(s->ctx, &t, (const float *)out, 2 * n * per, 1);
    if (st == GCN_OK)
        st = gcn_comm_allreduce_f64(s->ctx, (double *)gcn_tensor_data(t), (int64_t)n * per);
    if (st == GCN_OK)
        st = gcn_tensor_to_host(s->ctx, t, (float *)out);
    gcn_tensor_free(&t);
    return st;
}

enum { G_NODES, G_HALO, G_NNZ, G_PEAK, G_EXCHANGE_MS, G_EXCHANGE_MIB, G_PER };

/* Rank 0's lines on the partition (with the run's first trainer), or on
 * the traffic and memory (at the end, tr NULL), every rank's numbers
 * gathered. */
static int report(session *s, const gcn_trainer *tr, int epochs)
{
    bool partition = tr != NULL;
    double mine[G_PER] = {0}, *all = calloc((size_t)(s->job.ranks * G_PER), sizeof *all);
    if (!all)
        return fail(s, GCN_ERR_NOMEM, PHASE_TRAIN, "report");
    const gcn_csr *a = tr ? gcn_trainer_adjacency(tr, GCN_ADJ_GCN) : NULL;
    if (tr && !a)
        a = gcn_trainer_adjacency(tr, GCN_ADJ_RAW);
    gcn_memory_stats ms;
    gcn_comm_stats cs;
    gcn_ctx_memory_stats(s->ctx, &ms);
    gcn_comm_get_stats(s->ctx, &cs);
    if (a) {
        mine[G_NODES] = gcn_csr_rows(a);
        mine[G_HALO] = gcn_csr_cols(a) - gcn_csr_rows(a);
        mine[G_NNZ] = gcn_csr_nnz(a);
    }
    mine[G_PEAK] = (double)ms.peak / (1 << 20);
    mine[G_EXCHANGE_MS] = cs.exchange_ms;
    mine[G_EXCHANGE_MIB] = (double)cs.exchange_bytes / (1 << 20);
    gcn_status st = gather(s, mine, G_PER, all);
    if (st != GCN_OK) {
        free(all);
        return fail(s, st, PHASE_TRAIN, "report");
    }
    const gcn_reorder *r = s->ds->reorder;
    if (partition)
        printf("partition  %d rank processes (%s launcher, NCCL), %s: %lld of %d stored entries "
               "cut (%.2f %%), computed in %.3f s%s\n", s->job.ranks,
               gcn_launcher_name(s->job.launcher), s->cfg.reorder, (long long)r->edge_cut,
               s->ds->graph->nnz,
               s->ds->graph->nnz ? 100.0 * (double)r->edge_cut / s->ds->graph->nnz : 0.0,
               r->seconds, r->from_cache ? " (cached)" : "");
    for (int k = 0; k < s->job.ranks; k++) {
        const double *x = all + k * G_PER;
        if (partition) {
            printf("           rank %d: %.0f nodes, %.0f halo nodes, %.0f stored entries\n", k,
                   x[G_NODES], x[G_HALO], x[G_NNZ]);
            log_line(&s->log, "{\"rank\":%d,\"nodes\":%.0f,\"halo_nodes\":%.0f,\"nnz\":%.0f}", k,
                     x[G_NODES], x[G_HALO], x[G_NNZ]);
        } else {
            printf("rank %-5d peak %.1f MiB; per epoch %.3f MiB of halo rows sent, exchanges "
                   "%.3f ms (the mean over %d epochs, NCCL's set-up in the first included)\n", k,
                   x[G_PEAK], epochs ? x[G_EXCHANGE_MIB] / epochs : 0.0,
                   epochs ? x[G_EXCHANGE_MS] / epochs : 0.0, epochs);
            log_line(&s->log, "{\"rank\":%d,\"peak_mib\":%.1f,\"exchange_mib\":%.3f,"
                     "\"exchange_ms\":%.4f,\"epochs\":%d}", k, x[G_PEAK], x[G_EXCHANGE_MIB],
                     x[G_EXCHANGE_MS], epochs);
        }
    }
    fflush(stdout);
    free(all);
    return 0;
}

int job_partition(session *s, const gcn_trainer *tr)
{
    return s->rdv ? report(s, tr, 0) : 0;
}

int job_traffic(session *s)
{
    return s->rdv ? report(s, NULL, s->job_epochs) : 0;
}

gcn_status job_trainer_create(session *s, gcn_trainer **tr)
{
    const int32_t *part_ptr = s->ds->reorder->part_ptr[0];
    gcn_graph *adj[2] = {NULL, NULL};
    gcn_part_rows *rows[2] = {NULL, NULL};
    gcn_status st = GCN_OK;
    for (int i = 0; i < s->cfg.n_layers; i++) {
        gcn_adjacency k = s->cfg.layers[i].type == GCN_LAYER_GIN ? GCN_ADJ_RAW : GCN_ADJ_GCN;
        if (s->cfg.layers[i].type != GCN_LAYER_GIN && s->cfg.layers[i].type != GCN_LAYER_GCN)
            continue;
        if (!adj[k] && (st = gcn_dataset_adjacency_graph(s->ctx, s->ds, k, &adj[k])) == GCN_OK)
            st = gcn_partition_rows(s->ctx, adj[k], part_ptr, s->job.ranks, s->job.rank,
                                    &rows[k]);
        if (st != GCN_OK)
            break;
    }
    if (st == GCN_OK)
        st = gcn_trainer_create_rank(s->ctx, tr, &s->cfg, s->ds, rows[GCN_ADJ_GCN],
                                     rows[GCN_ADJ_RAW]);
    for (int k = 0; k < 2; k++) {
        gcn_part_rows_free(&rows[k]);
        gcn_graph_free(&adj[k]);
    }
    return st;
}

gcn_status job_agree(session *s, agreement how, int *value)
{
    if (!s->rdv)
        return GCN_OK;
    double mine = *value, all[GCN_MAX_JOB_RANKS];
    gcn_status st = gather(s, &mine, 1, all);
    if (st == GCN_OK)
        *value = agree_combine(how, all, s->job.ranks);
    return st;
}

void job_end(session *s, int rc)
{
    gcn_rendezvous_close(&s->rdv, rc == 0, s->error[0] ? s->error : "it exited early");
}
