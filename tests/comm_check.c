/* The communicator tests' harness (see comm_check.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>

#include "comm_check.h"

typedef struct job {
    gcn_ctx *ctx;
    int rank;
    comm_rank_fn fn;
    void *user;
} job;

static void *job_main(void *arg)
{
    job *j = arg;
    j->fn(j->ctx, j->rank, j->user);
    return NULL;
}

void comm_run(gcn_ctx *const *ctxs, int n, comm_rank_fn fn, void *user)
{
    cr_assert(n >= 1 && n <= COMM_MAX_RANKS);
    job jobs[COMM_MAX_RANKS];
    pthread_t threads[COMM_MAX_RANKS];
    for (int r = 0; r < n; r++) {
        jobs[r] = (job){.ctx = ctxs[r], .rank = r, .fn = fn, .user = user};
        cr_assert_eq(pthread_create(&threads[r], NULL, job_main, &jobs[r]), 0);
    }
    for (int r = 0; r < n; r++)
        pthread_join(threads[r], NULL);
}

void comm_cpu_ranks(gcn_ctx **ctxs, int n, int threads)
{
    gcn_ctx_opts o = gcn_ctx_default_opts();
    o.device = GCN_DEVICE_CPU;
    o.threads = threads;
    for (int r = 0; r < n; r++)
        cr_assert_eq(gcn_ctx_create(&ctxs[r], &o), GCN_OK);
    cr_assert_eq(gcn_comm_init(ctxs, n, GCN_COMM_LOCAL), GCN_OK, "%s", gcn_last_error(ctxs[0]));
}

void comm_free(gcn_ctx **ctxs, int n)
{
    for (int r = 0; r < n; r++)
        gcn_ctx_free(&ctxs[r]);
}

double comm_value_f64(int rank, int64_t i)
{
    int e = (int)((i * 7 + rank * 13) % 41) - 20;
    double u = (double)((i * 2654435761u + (uint64_t)rank * 40503u) % 1000003) / 1000003.0;
    return ldexp(2.0 * u - 1.0, e);
}

float comm_value(int rank, int64_t i)
{
    return (float)comm_value_f64(rank, i);
}

void comm_sum(int ranks, int64_t n, float *out)
{
    for (int64_t i = 0; i < n; i++) {
        float s = comm_value(0, i);
        for (int p = 1; p < ranks; p++)
            s += comm_value(p, i);
        out[i] = s;
    }
}

void comm_sum_f64(int ranks, int64_t n, double *out)
{
    for (int64_t i = 0; i < n; i++) {
        double s = comm_value_f64(0, i);
        for (int p = 1; p < ranks; p++)
            s += comm_value_f64(p, i);
        out[i] = s;
    }
}

int64_t comm_block(int p, int q)
{
    static const int64_t sizes[5] = {0, 1, 5, 0, 300};
    return sizes[(p * 3 + q * 2 + p * q + 1) % 5];
}

void comm_offsets(int rank, int ranks, int64_t *send_off, int64_t *recv_off)
{
    send_off[0] = recv_off[0] = 0;
    for (int p = 0; p < ranks; p++) {
        send_off[p + 1] = send_off[p] + comm_block(rank, p);
        recv_off[p + 1] = recv_off[p] + comm_block(p, rank);
    }
}

float comm_block_value(int p, int q, int64_t i)
{
    return (float)(p * 100000 + q * 1000) + (float)i;
}
