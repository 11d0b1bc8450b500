/* Communicators: joining contexts as ranks, the group they share (reference
 * count, the rank threads' barrier, the stopped state), and the public
 * collectives, which check their arguments, run the transport and count
 * the traffic and the time the transport measured. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_impl.h"

struct gcn_comm_group {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ranks;
    int refs;              /* member contexts not freed yet */
    int arrived;           /* ranks in the current barrier */
    uint64_t generation;   /* barriers completed */
    bool stopped;
    bool abort_endpoints;  /* the transport's endpoints are being aborted (gcn_comm_abort
                            * or a failure, not a free, on a transport with abort_rank) */
    int stopped_rank;
    char stopped_msg[448];
    bool *busy;            /* [ranks]: the rank is inside a transport call */
    bool *aborted;         /* [ranks]: the transport's abort_rank ran for it */
    const gcn_comm_transport *tp;
    void *state;
};

static void group_free(gcn_comm_group *g)
{
    if (g->tp)
        g->tp->close(g->state, g->ranks);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g->busy);
    free(g->aborted);
    free(g);
}

static gcn_status group_create(gcn_ctx *ctx, int ranks, gcn_comm_group **out)
{
    gcn_comm_group *g = calloc(1, sizeof *g);
    if (!g)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a communicator");
    g->busy = calloc((size_t)ranks, sizeof *g->busy);
    g->aborted = calloc((size_t)ranks, sizeof *g->aborted);
    bool mu = pthread_mutex_init(&g->mu, NULL) == 0;
    bool cv = pthread_cond_init(&g->cv, NULL) == 0;
    if (!g->busy || !g->aborted || !mu || !cv) {
        if (mu)
            pthread_mutex_destroy(&g->mu);
        if (cv)
            pthread_cond_destroy(&g->cv);
        free(g->busy);
        free(g->aborted);
        free(g);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for a communicator of %d ranks",
                         ranks);
    }
    g->ranks = g->refs = ranks;
    *out = g;
    return GCN_OK;
}

/* ---- stopping ------------------------------------------------------------- */

static gcn_status stopped_error(gcn_ctx *ctx)
{
    gcn_comm_group *g = ctx->comm->group;
    char msg[sizeof g->stopped_msg];
    pthread_mutex_lock(&g->mu);
    int rank = g->stopped_rank;
    memcpy(msg, g->stopped_msg, sizeof msg);
    pthread_mutex_unlock(&g->mu);
    if (rank < 0) /* gcn_comm_stop without a rank to name */
        return GCN_ERROR(ctx, GCN_ERR_STATE, "the communicator stopped: %s", msg);
    return GCN_ERROR(ctx, GCN_ERR_STATE, "rank %d stopped: %s", rank, msg);
}

/* Stops the communicator in the name of `rank` (the first stop keeps its
 * rank and message) and wakes the ranks in the barrier; with
 * abort_endpoints, aborts the transport of every rank not inside a call
 * now (the others abort their own as they leave it). */
static void stop(gcn_comm *c, int rank, const char *msg, bool abort_endpoints)
{
    gcn_comm_group *g = c->group;
    pthread_mutex_lock(&g->mu);
    if (!g->stopped) {
        g->stopped = true;
        g->stopped_rank = rank;
        snprintf(g->stopped_msg, sizeof g->stopped_msg, "%s", msg);
        pthread_cond_broadcast(&g->cv);
    }
    bool sweep = abort_endpoints && g->tp->abort_rank && !g->abort_endpoints;
    g->abort_endpoints = g->abort_endpoints || sweep;
    pthread_mutex_unlock(&g->mu);
    for (int p = 0; sweep && p < g->ranks; p++) {
        pthread_mutex_lock(&g->mu);
        bool now = !g->busy[p] && !g->aborted[p];
        g->aborted[p] = g->aborted[p] || now;
        pthread_mutex_unlock(&g->mu);
        if (now)
            g->tp->abort_rank(g->state, p);
    }
}

void gcn_comm_abort(gcn_ctx *ctx)
{
    if (ctx && ctx->comm)
        stop(ctx->comm, ctx->comm->rank, ctx->err[0] ? ctx->err : "no error recorded on it",
             true);
}

void gcn_comm_stop(gcn_ctx *ctx, int failed, const char *msg)
{
    if (ctx && ctx->comm)
        stop(ctx->comm, failed, msg ? msg : "no reason given", true);
}

gcn_status gcn_comm_async_error(gcn_ctx *ctx, char *msg, size_t size)
{
    if (!ctx || !ctx->comm || !ctx->comm->tp->async_error)
        return GCN_OK;
    gcn_comm *c = ctx->comm;
    gcn_comm_group *g = c->group;
    char why[256] = "";
    pthread_mutex_lock(&g->mu);
    bool bad = !g->aborted[c->rank] && c->tp->async_error(c->state, c->rank, why, sizeof why);
    pthread_mutex_unlock(&g->mu);
    if (bad && msg && size)
        snprintf(msg, size, "%s", why);
    return bad ? GCN_ERR_CUDA : GCN_OK;
}

gcn_status gcn_comm_fail(gcn_ctx *ctx, gcn_status st)
{
    gcn_comm_abort(ctx);
    return st;
}

void gcn_comm_detach(gcn_ctx *ctx)
{
    gcn_comm *c = ctx->comm;
    if (!c)
        return;
    gcn_comm_group *g = c->group;
    /* the rank's queued collectives finish before its endpoint may close */
    (void)ctx->be->sync(ctx);
    stop(c, c->rank, "its context was freed", false);
    pthread_mutex_lock(&g->mu);
    bool last = --g->refs == 0;
    pthread_mutex_unlock(&g->mu);
    if (last)
        group_free(g);
    free(c);
    ctx->comm = NULL;
}

/* ---- the barrier and transport calls ----------------------------------------- */

gcn_status gcn_comm_wait(gcn_ctx *ctx)
{
    gcn_comm_group *g = ctx->comm->group;
    pthread_mutex_lock(&g->mu);
    uint64_t gen = g->generation;
    if (!g->stopped && ++g->arrived == g->ranks) {
        g->arrived = 0;
        g->generation++;
        pthread_cond_broadcast(&g->cv);
    }
    while (g->generation == gen && !g->stopped)
        pthread_cond_wait(&g->cv, &g->mu);
    bool passed = g->generation != gen;
    pthread_mutex_unlock(&g->mu);
    return passed ? GCN_OK : stopped_error(ctx);
}

/* The start of a collective: ctx must be a rank; fails once stopped, else
 * marks the rank inside the transport. */
static gcn_status enter(gcn_ctx *ctx, const char *what)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    if (!ctx->comm)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "%s: the context is in no communicator "
                                             "(gcn_comm_init)", what);
    gcn_comm *c = ctx->comm;
    gcn_comm_group *g = c->group;
    if (c->exchanging)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "%s: the exchange gcn_comm_alltoallv_begin "
                         "started is not ended (gcn_comm_alltoallv_end)", what);
    pthread_mutex_lock(&g->mu);
    bool stopped = g->stopped;
    g->busy[c->rank] = !stopped;
    pthread_mutex_unlock(&g->mu);
    return stopped ? stopped_error(ctx) : GCN_OK;
}

/* The end of a transport call that returned st: a rank whose endpoint was
 * to be aborted while it was inside aborts it now, and its call, whatever
 * it returned, cannot have completed with the others. */
static gcn_status leave(gcn_ctx *ctx, gcn_status st)
{
    gcn_comm *c = ctx->comm;
    gcn_comm_group *g = c->group;
    pthread_mutex_lock(&g->mu);
    g->busy[c->rank] = false;
    bool own = g->abort_endpoints && !g->aborted[c->rank];
    g->aborted[c->rank] = g->aborted[c->rank] || own;
    pthread_mutex_unlock(&g->mu);
    if (own) {
        g->tp->abort_rank(g->state, c->rank);
        if (st == GCN_OK)
            return stopped_error(ctx);
    }
    return st;
}

/* ---- joining ----------------------------------------------------------------- */

static const char *device_str(const gcn_ctx *ctx, char *buf, size_t size)
{
    if (ctx->device != GCN_DEVICE_CUDA)
        return "the CPU";
    snprintf(buf, size, "cuda:%d", ctx->device_index);
    return buf;
}

gcn_status gcn_comm_check_devices(gcn_ctx *const *ctxs, int n, gcn_comm_kind kind)
{
    char a[32], b[32];
    for (int i = 0; i < n; i++) {
        const gcn_ctx *x = ctxs[i];
        bool same = x->device == ctxs[0]->device &&
                    (x->device != GCN_DEVICE_CUDA || x->device_index == ctxs[0]->device_index);
        if (kind == GCN_COMM_LOCAL && !same)
            return GCN_ERROR(ctxs[0], GCN_ERR_DEVICE,
                             "LOCAL communicator: rank %d is on %s, rank 0 on %s: its ranks must "
                             "share one device (GCN_COMM_NCCL spreads them over GPUs)", i,
                             device_str(x, a, sizeof a), device_str(ctxs[0], b, sizeof b));
        if (kind == GCN_COMM_NCCL && x->device != GCN_DEVICE_CUDA)
            return GCN_ERROR(ctxs[0], GCN_ERR_DEVICE,
                             "NCCL communicator: rank %d is on the CPU: NCCL needs a GPU per "
                             "rank (GCN_COMM_LOCAL runs ranks on the CPU)", i);
        for (int j = 0; kind == GCN_COMM_NCCL && j < i; j++)
            if (ctxs[j]->device_index == x->device_index)
                return GCN_ERROR(ctxs[0], GCN_ERR_DEVICE,
                                 "NCCL communicator: ranks %d and %d are both on cuda:%d: NCCL "
                                 "needs a GPU per rank (GCN_COMM_LOCAL runs ranks on one GPU)",
                                 j, i, x->device_index);
    }
    return GCN_OK;
}

static gcn_status check_members(gcn_ctx *const *ctxs, int n)
{
    for (int i = 0; i < n; i++) {
        if (!ctxs[i])
            return GCN_ERROR(ctxs[0], GCN_ERR_INVALID_ARG, "gcn_comm_init: context %d is NULL",
                             i);
        if (ctxs[i]->comm)
            return GCN_ERROR(ctxs[0], GCN_ERR_STATE,
                             "gcn_comm_init: context %d is already rank %d of a communicator", i,
                             ctxs[i]->comm->rank);
        for (int j = 0; j < i; j++)
            if (ctxs[j] == ctxs[i])
                return GCN_ERROR(ctxs[0], GCN_ERR_INVALID_ARG,
                                 "gcn_comm_init: one context given as ranks %d and %d", j, i);
    }
    return GCN_OK;
}

gcn_status gcn_comm_init(gcn_ctx *const *ctxs, int n, gcn_comm_kind kind)
{
    if (!ctxs || n < 1 || !ctxs[0])
        return GCN_ERR_INVALID_ARG;
    if (kind != GCN_COMM_LOCAL && kind != GCN_COMM_NCCL)
        return GCN_ERROR(ctxs[0], GCN_ERR_INVALID_ARG, "gcn_comm_init: unknown kind %d",
                         (int)kind);
    GCN_TRY(check_members(ctxs, n));
    gcn_comm_group *g = NULL;
    GCN_TRY(group_create(ctxs[0], n, &g));
    gcn_comm **ranks = calloc((size_t)n, sizeof *ranks);
    gcn_status st = ranks ? GCN_OK : GCN_ERROR(ctxs[0], GCN_ERR_NOMEM, "out of host memory");
    for (int i = 0; st == GCN_OK && i < n; i++)
        if (!(ranks[i] = calloc(1, sizeof **ranks)))
            st = GCN_ERROR(ctxs[0], GCN_ERR_NOMEM, "out of host memory");
    if (st == GCN_OK)
        st = (kind == GCN_COMM_LOCAL ? gcn_comm_local_open : gcn_comm_nccl_open)(ctxs, n, &g->tp,
                                                                                 &g->state);
    for (int i = 0; st == GCN_OK && i < n; i++) {
        *ranks[i] = (gcn_comm){.group = g, .kind = kind, .rank = i, .ranks = n, .tp = g->tp,
                               .state = g->state};
        ctxs[i]->comm = ranks[i];
        ranks[i] = NULL;
    }
    for (int i = 0; ranks && i < n; i++)
        free(ranks[i]);
    free(ranks);
    if (st != GCN_OK)
        group_free(g);
    return st;
}

gcn_status gcn_comm_join(gcn_ctx *ctx, int rank, int ranks, const gcn_comm_id *id)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, id && ranks >= 1 && ranks <= GCN_MAX_JOB_RANKS && rank >= 0 && rank < ranks);
    gcn_ctx *one[1] = {ctx};
    GCN_TRY(check_members(one, 1));
    GCN_TRY(gcn_comm_check_devices(one, 1, GCN_COMM_NCCL));
    gcn_comm_group *g = NULL;
    GCN_TRY(group_create(ctx, ranks, &g));
    g->refs = 1; /* the other ranks are other processes' */
    gcn_comm *c = calloc(1, sizeof *c);
    gcn_status st = c ? gcn_comm_nccl_join(ctx, rank, ranks, id, &g->tp, &g->state)
                      : GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory");
    if (st != GCN_OK) {
        free(c);
        group_free(g);
        return st;
    }
    *c = (gcn_comm){.group = g, .kind = GCN_COMM_NCCL, .rank = rank, .ranks = ranks,
                    .tp = g->tp, .state = g->state};
    ctx->comm = c;
    return GCN_OK;
}

int gcn_ctx_rank(const gcn_ctx *ctx)
{
    return ctx && ctx->comm ? ctx->comm->rank : 0;
}

int gcn_ctx_ranks(const gcn_ctx *ctx)
{
    return ctx && ctx->comm ? ctx->comm->ranks : 1;
}

gcn_comm_kind gcn_ctx_comm_kind(const gcn_ctx *ctx)
{
    return ctx && ctx->comm ? ctx->comm->kind : (gcn_comm_kind)0;
}

/* The slot of layer label `layer` in layer_stats. */
static int layer_slot(int layer)
{
    return layer > 0 && layer < GCN_COMM_MAX_LAYERS ? layer : 0;
}

void gcn_comm_add_time(gcn_comm *c, bool exchange, int layer, double ms)
{
    gcn_comm_stats *l = &c->layer_stats[layer_slot(layer)];
    if (exchange) {
        c->stats.exchange_ms += ms;
        l->exchange_ms += ms;
    } else {
        c->stats.allreduce_ms += ms;
        l->allreduce_ms += ms;
    }
}

/* Counts one successful collective of `bytes` (an exchange, else an
 * all-reduce) in the rank's stats and its layer's, with its time. */
static void count_call(gcn_comm *c, bool exchange, int layer, int64_t bytes, double ms)
{
    gcn_comm_stats *both[2] = {&c->stats, &c->layer_stats[layer_slot(layer)]};
    for (int i = 0; i < 2; i++) {
        *(exchange ? &both[i]->exchange_calls : &both[i]->allreduce_calls) += 1;
        *(exchange ? &both[i]->exchange_bytes : &both[i]->allreduce_bytes) += bytes;
    }
    gcn_comm_add_time(c, exchange, layer, ms);
}

/* The rank's stats, with the times its transport measures later added. */
static const gcn_comm *settled(const gcn_ctx *ctx)
{
    if (!ctx || !ctx->comm)
        return NULL;
    gcn_comm *c = ctx->comm;
    if (c->tp->settle)
        c->tp->settle(c->state, c);
    return c;
}

void gcn_comm_get_stats(const gcn_ctx *ctx, gcn_comm_stats *stats)
{
    if (!stats)
        return;
    memset(stats, 0, sizeof *stats);
    const gcn_comm *c = settled(ctx);
    if (c)
        *stats = c->stats;
}

void gcn_comm_get_layer_stats(const gcn_ctx *ctx, int layer, gcn_comm_stats *stats)
{
    if (!stats)
        return;
    memset(stats, 0, sizeof *stats);
    const gcn_comm *c = layer >= 0 && layer < GCN_COMM_MAX_LAYERS ? settled(ctx) : NULL;
    if (c)
        *stats = c->layer_stats[layer];
}

/* ---- collectives --------------------------------------------------------------- */

static gcn_status allreduce(gcn_ctx *ctx, void *buf, int64_t n, size_t elem, const char *what)
{
    GCN_TRY(enter(ctx, what));
    gcn_status st = GCN_OK;
    double ms = 0.0;
    if (n < 0 || (n > 0 && !buf))
        st = gcn_comm_fail(ctx, GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: buf %s with n = %lld",
                                          what, buf ? "set" : "NULL", (long long)n));
    else
        st = ctx->comm->tp->allreduce(ctx, buf, n, elem, &ms);
    GCN_TRY(leave(ctx, st));
    count_call(ctx->comm, false, ctx->layer, n * (int64_t)elem, ms);
    return GCN_OK;
}

gcn_status gcn_comm_allreduce(gcn_ctx *ctx, float *buf, int64_t n)
{
    return allreduce(ctx, buf, n, sizeof *buf, "gcn_comm_allreduce");
}

gcn_status gcn_comm_allreduce_f64(gcn_ctx *ctx, double *buf, int64_t n)
{
    return allreduce(ctx, buf, n, sizeof *buf, "gcn_comm_allreduce_f64");
}

/* Offsets of ranks + 1 entries from 0, non-decreasing, over a buffer that
 * is set when they cover anything. */
static gcn_status check_offsets(gcn_ctx *ctx, const char *name, const int64_t *off, int ranks,
                                const float *buf)
{
    if (!off)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "gcn_comm_alltoallv: %s_off is NULL", name);
    if (off[0] != 0)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "gcn_comm_alltoallv: %s_off[0] = %lld, not 0",
                         name, (long long)off[0]);
    for (int p = 0; p < ranks; p++)
        if (off[p + 1] < off[p])
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                             "gcn_comm_alltoallv: %s_off[%d] = %lld, [%d] = %lld: offsets must "
                             "not decrease", name, p, (long long)off[p], p + 1,
                             (long long)off[p + 1]);
    if (off[ranks] > 0 && !buf)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "gcn_comm_alltoallv: %s is NULL for %lld "
                                                   "floats", name, (long long)off[ranks]);
    return GCN_OK;
}

static gcn_status check_exchange(gcn_ctx *ctx, const float *send, const int64_t *send_off,
                                 float *recv, const int64_t *recv_off)
{
    int ranks = ctx->comm->ranks;
    GCN_TRY(check_offsets(ctx, "send", send_off, ranks, send));
    GCN_TRY(check_offsets(ctx, "recv", recv_off, ranks, recv));
    if (send_off[ranks] > 0 && recv_off[ranks] > 0 && send < recv + recv_off[ranks] &&
        recv < send + send_off[ranks])
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "gcn_comm_alltoallv: send and recv overlap");
    return GCN_OK;
}

static gcn_status alltoallv(gcn_ctx *ctx, const float *send, const int64_t *send_off,
                            float *recv, const int64_t *recv_off, bool async, const char *what)
{
    GCN_TRY(enter(ctx, what));
    gcn_comm *c = ctx->comm;
    gcn_status st = check_exchange(ctx, send, send_off, recv, recv_off);
    double ms = 0.0;
    if (st != GCN_OK)
        st = gcn_comm_fail(ctx, st);
    else
        st = c->tp->alltoallv(ctx, send, send_off, recv, recv_off, async, &ms);
    GCN_TRY(leave(ctx, st));
    count_call(c, true, ctx->layer,
               (send_off[c->ranks] - (send_off[c->rank + 1] - send_off[c->rank])) *
                   (int64_t)sizeof *send,
               ms);
    c->exchanging = async;
    return GCN_OK;
}

gcn_status gcn_comm_alltoallv(gcn_ctx *ctx, const float *send, const int64_t *send_off,
                              float *recv, const int64_t *recv_off)
{
    return alltoallv(ctx, send, send_off, recv, recv_off, false, "gcn_comm_alltoallv");
}

gcn_status gcn_comm_alltoallv_begin(gcn_ctx *ctx, const float *send, const int64_t *send_off,
                                    float *recv, const int64_t *recv_off)
{
    return alltoallv(ctx, send, send_off, recv, recv_off, true, "gcn_comm_alltoallv_begin");
}

gcn_status gcn_comm_alltoallv_end(gcn_ctx *ctx)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    if (!ctx->comm || !ctx->comm->exchanging)
        return GCN_ERROR(ctx, GCN_ERR_STATE,
                         "gcn_comm_alltoallv_end: no exchange begun (gcn_comm_alltoallv_begin)");
    gcn_comm *c = ctx->comm;
    c->exchanging = false;
    gcn_status st = c->tp->wait_exchange ? c->tp->wait_exchange(ctx) : GCN_OK;
    return st == GCN_OK ? GCN_OK : gcn_comm_fail(ctx, st);
}

gcn_status gcn_comm_barrier(gcn_ctx *ctx)
{
    GCN_TRY(enter(ctx, "gcn_comm_barrier"));
    return leave(ctx, ctx->comm->tp->barrier(ctx));
}
