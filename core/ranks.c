/* A group of ranks: contexts, their communicator, and a thread per rank
 * beyond the first that waits for the next function to run (so each rank
 * keeps one thread, with its OpenMP team, from run to run). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "parallel.h"
#include "ranks.h"

typedef struct worker {
    struct gcn_ranks *g;
    int rank;
    pthread_t thread;
    bool started;
} worker;

struct gcn_ranks {
    int n;
    gcn_ctx *ctx[GCN_MAX_RANKS];
    worker workers[GCN_MAX_RANKS];
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t generation; /* runs started */
    int pending;         /* ranks of the current run still working */
    bool quit;
    gcn_rank_fn fn;
    void *user;
    gcn_status status[GCN_MAX_RANKS];
    int first_failed;    /* -1 while none */
    bool stopped;        /* a run failed: the communicator is aborted */
};

/* Runs the current function on rank r; a failure aborts the communicator
 * and, if it is the first, is the one reported. */
static void run_rank(gcn_ranks *g, int r)
{
    gcn_status st = g->fn(g->ctx[r], r, g->user);
    g->status[r] = st;
    if (st == GCN_OK)
        return;
    pthread_mutex_lock(&g->mu);
    if (g->first_failed < 0)
        g->first_failed = r;
    pthread_mutex_unlock(&g->mu);
    gcn_comm_abort(g->ctx[r]);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    gcn_ranks *g = w->g;
    uint64_t seen = 0;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->quit && g->generation == seen)
            pthread_cond_wait(&g->go, &g->mu);
        if (g->quit)
            break;
        seen = g->generation;
        pthread_mutex_unlock(&g->mu);
        run_rank(g, w->rank);
        pthread_mutex_lock(&g->mu);
        if (--g->pending == 0)
            pthread_cond_signal(&g->done);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Each rank's context options: its device and its share of the CPUs. */
static gcn_ctx_opts rank_opts(const gcn_ctx_opts *base, int n, int r, gcn_comm_kind kind)
{
    gcn_ctx_opts o = *base;
    if (kind == GCN_COMM_NCCL)
        o.device_index = base->device_index + r;
    if (o.threads == 0) {
        int share = gcn_cpu_count() / n;
        o.threads = share > 0 ? share : 1;
    }
    return o;
}

static gcn_status start_workers(gcn_ctx *ctx, gcn_ranks *g)
{
    for (int r = 1; r < g->n; r++) {
        worker *w = &g->workers[r];
        *w = (worker){.g = g, .rank = r};
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
            return GCN_ERROR(ctx, GCN_ERR_NOMEM, "ranks: cannot start the thread of rank %d", r);
        w->started = true;
    }
    return GCN_OK;
}

gcn_status gcn_ranks_create(gcn_ctx *ctx, gcn_ranks **out, int n, gcn_comm_kind kind,
                            const gcn_ctx_opts *opts)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, out);
    *out = NULL;
    if (n < 1 || n > GCN_MAX_RANKS)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "ranks: %d ranks, not in [1, %d]", n,
                         GCN_MAX_RANKS);
    gcn_ctx_opts base = gcn_ctx_default_opts();
    if (opts)
        GCN_TRY(gcn_struct_import(ctx, "gcn_ctx_opts", &base, &base, sizeof base, opts));
    gcn_ranks *g = calloc(1, sizeof *g);
    if (!g)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "ranks: out of host memory");
    g->n = n;
    g->first_failed = -1;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->go, NULL);
    pthread_cond_init(&g->done, NULL);
    gcn_status st = GCN_OK;
    for (int r = 0; r < n; r++) {
        gcn_ctx_opts o = rank_opts(&base, n, r, kind);
        st = gcn_ctx_create(&g->ctx[r], &o);
        if (st != GCN_OK) {
            st = GCN_ERROR(ctx, st, "ranks: cannot create the context of rank %d (%s:%d)", r,
                           gcn_device_name(o.device), o.device_index);
            goto cleanup;
        }
    }
    st = gcn_comm_init(g->ctx, n, kind);
    if (st != GCN_OK) { /* recorded on rank 0's context, with its place */
        snprintf(ctx->err, sizeof ctx->err, "%s", gcn_last_error(g->ctx[0]));
        goto cleanup;
    }
    GCN_CHECK(start_workers(ctx, g));
    *out = g;
    return GCN_OK;
cleanup:
    gcn_ranks_free(&g);
    return st;
}

int gcn_ranks_count(const gcn_ranks *g)
{
    return g ? g->n : 0;
}

gcn_ctx *gcn_ranks_ctx(const gcn_ranks *g, int r)
{
    return g && r >= 0 && r < g->n ? g->ctx[r] : NULL;
}

gcn_status gcn_ranks_run(gcn_ctx *ctx, gcn_ranks *g, gcn_rank_fn fn, void *user)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, g && fn);
    if (g->stopped)
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "ranks: a rank failed earlier and the communicator is stopped");
    pthread_mutex_lock(&g->mu);
    g->fn = fn;
    g->user = user;
    g->first_failed = -1;
    g->pending = g->n - 1;
    g->generation++;
    pthread_cond_broadcast(&g->go);
    pthread_mutex_unlock(&g->mu);
    run_rank(g, 0);
    pthread_mutex_lock(&g->mu);
    while (g->pending > 0)
        pthread_cond_wait(&g->done, &g->mu);
    int bad = g->first_failed;
    pthread_mutex_unlock(&g->mu);
    if (bad < 0)
        return GCN_OK;
    g->stopped = true;
    return GCN_ERROR(ctx, g->status[bad], "rank %d: %s", bad, gcn_last_error(g->ctx[bad]));
}

/* Copies each gradient into (to_flat) or out of the flat buffer. */
static gcn_status move_grads(gcn_ctx *ctx, gcn_tensor *const *params, int n, float *flat,
                             bool to_flat)
{
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        const gcn_tensor *g = params[i]->grad;
        if (!g)
            continue;
        size_t bytes = (size_t)(g->rows * g->cols) * sizeof(float);
        GCN_TRY(to_flat ? ctx->be->copy(ctx, flat + at, g->data, bytes)
                        : ctx->be->copy(ctx, g->data, flat + at, bytes));
        at += g->rows * g->cols;
    }
    return GCN_OK;
}

gcn_status gcn_comm_allreduce_grads(gcn_ctx *ctx, gcn_tensor *const *params, int n)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, n >= 0 && (params || n == 0));
    int64_t len = 0;
    for (int i = 0; i < n; i++) {
        GCN_TRY(gcn_check_tensor(ctx, params[i], "allreduce_grads parameter"));
        if (params[i]->grad)
            len += params[i]->grad->rows * params[i]->grad->cols;
    }
    size_t bytes = (size_t)len * sizeof(float);
    float *flat = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&flat, bytes));
    gcn_status st = move_grads(ctx, params, n, flat, true);
    if (st == GCN_OK)
        st = gcn_comm_allreduce(ctx, flat, len);
    if (st == GCN_OK)
        st = move_grads(ctx, params, n, flat, false);
    gcn_mem_release(ctx, flat, bytes);
    return st;
}

void gcn_ranks_free(gcn_ranks **pg)
{
    if (!pg || !*pg)
        return;
    gcn_ranks *g = *pg;
    *pg = NULL;
    pthread_mutex_lock(&g->mu);
    g->quit = true;
    pthread_cond_broadcast(&g->go);
    pthread_mutex_unlock(&g->mu);
    for (int r = 1; r < g->n; r++)
        if (g->workers[r].started)
            pthread_join(g->workers[r].thread, NULL);
    for (int r = 0; r < g->n; r++)
        gcn_ctx_free(&g->ctx[r]);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->go);
    pthread_cond_destroy(&g->done);
    free(g);
}
