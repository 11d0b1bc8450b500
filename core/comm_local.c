/* The LOCAL transport: the ranks are threads of this process on one device.
 * A rank finishes the work queued on its stream, publishes its buffers in
 * its slot and waits for the others; it then reads theirs with copies and
 * adds queued on its own stream (plain memory on the CPU), finishes them,
 * waits until every rank has done the same, and only then writes into its
 * own buffers, which the others may have been reading.  The host time of
 * the copies and adds, without the waits, goes into the rank's stats. */
#include <stdlib.h>
#include <time.h>

#include "comm_impl.h"
#include "parallel.h"

typedef enum coll { COLL_ALLREDUCE = 1, COLL_ALLTOALLV, COLL_BARRIER } coll;

/* What a rank publishes for the collective it is in. */
typedef struct slot {
    coll coll;
    const void *buf;                   /* all-reduce: the buffer; exchange: send */
    int64_t n;                         /* all-reduce: elements of elem bytes */
    size_t elem;
    const int64_t *send_off, *recv_off; /* exchange */
} slot;

/* The monotonic clock in milliseconds. */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static const char *coll_name(coll c)
{
    switch (c) {
    case COLL_ALLREDUCE: return "an all-reduce";
    case COLL_ALLTOALLV: return "an exchange";
    case COLL_BARRIER: return "a barrier";
    }
    return "an unknown collective";
}

/* Publishes the rank's slot (after finishing its stream's work when the
 * others are to read its buffers) and waits for every rank's. */
static gcn_status publish(gcn_ctx *ctx, slot mine, bool sync)
{
    gcn_status st = sync ? ctx->be->sync(ctx) : GCN_OK;
    if (st != GCN_OK)
        return gcn_comm_fail(ctx, st);
    ((slot *)ctx->comm->state)[ctx->comm->rank] = mine;
    return gcn_comm_wait(ctx);
}

/* Every rank sees the same slots, so every rank finds the same mismatch. */
static gcn_status check_coll(gcn_ctx *ctx, const slot *s)
{
    for (int p = 1; p < ctx->comm->ranks; p++)
        if (s[p].coll != s[0].coll)
            return GCN_ERROR(ctx, GCN_ERR_STATE,
                             "collectives out of step: rank 0 is in %s, rank %d in %s",
                             coll_name(s[0].coll), p, coll_name(s[p].coll));
    return GCN_OK;
}

/* y[i] += x[i] in double, on the context's device. */
static gcn_status add_f64(gcn_ctx *ctx, int64_t n, const double *x, double *y)
{
    if (ctx->device == GCN_DEVICE_CUDA)
        return gcn_comm_cuda_add_f64(ctx, n, x, y);
    GCN_PAR_FOR_SIMD(gcn_par_threads(ctx, n))
    for (int64_t i = 0; i < n; i++)
        y[i] += x[i];
    return GCN_OK;
}

/* *out = rank 0's buffer + rank 1's + ... in rank order, in new memory of
 * the context, finished before it returns. */
static gcn_status sum_ranks(gcn_ctx *ctx, const slot *s, int64_t n, size_t elem, void **out)
{
    size_t bytes = (size_t)n * elem;
    void *sum = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, &sum, bytes));
    gcn_status st = ctx->be->copy(ctx, sum, s[0].buf, bytes);
    for (int p = 1; st == GCN_OK && p < ctx->comm->ranks; p++)
        st = elem == sizeof(float) ? ctx->be->add(ctx, n, sum, s[p].buf, sum)
                                   : add_f64(ctx, n, s[p].buf, sum);
    if (st == GCN_OK)
        st = ctx->be->sync(ctx);
    if (st != GCN_OK) {
        gcn_mem_release(ctx, sum, bytes);
        return st;
    }
    *out = sum;
    return GCN_OK;
}

/* *ms: the sum and the copy back, each up to its stream's sync. */
static gcn_status local_allreduce(gcn_ctx *ctx, void *buf, int64_t n, size_t elem, double *ms)
{
    const slot *s = ctx->comm->state;
    GCN_TRY(publish(ctx, (slot){.coll = COLL_ALLREDUCE, .buf = buf, .n = n, .elem = elem}, true));
    double t0 = now_ms();
    gcn_status agreed = check_coll(ctx, s);
    for (int p = 1; agreed == GCN_OK && p < ctx->comm->ranks; p++)
        if (s[p].n != s[0].n || s[p].elem != s[0].elem)
            agreed = GCN_ERROR(ctx, GCN_ERR_SHAPE,
                               "all-reduce sizes differ: rank 0 sums %lld %s, rank %d %lld %s",
                               (long long)s[0].n, s[0].elem == sizeof(float) ? "floats" : "doubles",
                               p, (long long)s[p].n,
                               s[p].elem == sizeof(float) ? "floats" : "doubles");
    void *sum = NULL;
    size_t bytes = (size_t)n * elem;
    if (agreed == GCN_OK && n > 0) {
        gcn_status st = sum_ranks(ctx, s, n, elem, &sum);
        if (st != GCN_OK)
            return gcn_comm_fail(ctx, st);
    }
    double summed = now_ms();
    /* the others have finished reading buf once every rank is here */
    gcn_status st = gcn_comm_wait(ctx);
    double t1 = now_ms();
    if (st == GCN_OK && sum) {
        st = ctx->be->copy(ctx, buf, sum, bytes);
        if (st == GCN_OK)
            st = ctx->be->sync(ctx);
        if (st != GCN_OK)
            st = gcn_comm_fail(ctx, st);
    }
    *ms = (summed - t0) + (now_ms() - t1);
    gcn_mem_release(ctx, sum, bytes);
    return st != GCN_OK ? st : agreed;
}

/* What p sends q against what q expects from p, for every pair: the first
 * mismatch involving the calling rank, else the first one. */
static gcn_status check_blocks(gcn_ctx *ctx, const slot *s)
{
    int ranks = ctx->comm->ranks, me = ctx->comm->rank, bad_p = -1, bad_q = -1;
    for (int p = 0; p < ranks; p++)
        for (int q = 0; q < ranks; q++) {
            int64_t sent = s[p].send_off[q + 1] - s[p].send_off[q];
            int64_t expected = s[q].recv_off[p + 1] - s[q].recv_off[p];
            bool mine = p == me || q == me;
            if (sent != expected && (bad_p < 0 || (mine && bad_p != me && bad_q != me))) {
                bad_p = p;
                bad_q = q;
            }
        }
    if (bad_p < 0)
        return GCN_OK;
    return GCN_ERROR(ctx, GCN_ERR_SHAPE,
                     "exchange sizes differ: rank %d sends %lld floats to rank %d, which "
                     "expects %lld", bad_p,
                     (long long)(s[bad_p].send_off[bad_q + 1] - s[bad_p].send_off[bad_q]), bad_q,
                     (long long)(s[bad_q].recv_off[bad_p + 1] - s[bad_q].recv_off[bad_p]));
}

/* *ms: the copies of the blocks, up to the stream's sync. */
/* Completes the exchange at once, async or not. */
static gcn_status local_alltoallv(gcn_ctx *ctx, const float *send, const int64_t *send_off,
                                  float *recv, const int64_t *recv_off, bool async, double *ms)
{
    (void)async;
    const slot *s = ctx->comm->state;
    int me = ctx->comm->rank;
    GCN_TRY(publish(ctx, (slot){.coll = COLL_ALLTOALLV, .buf = send, .send_off = send_off,
                                .recv_off = recv_off}, true));
    double t0 = now_ms();
    gcn_status agreed = check_coll(ctx, s);
    if (agreed == GCN_OK)
        agreed = check_blocks(ctx, s);
    if (agreed == GCN_OK) {
        gcn_status st = GCN_OK;
        for (int p = 0; st == GCN_OK && p < ctx->comm->ranks; p++) {
            int64_t len = recv_off[p + 1] - recv_off[p];
            if (len > 0)
                st = ctx->be->copy(ctx, recv + recv_off[p],
                                   (const float *)s[p].buf + s[p].send_off[me],
                                   (size_t)len * sizeof *recv);
        }
        if (st == GCN_OK)
            st = ctx->be->sync(ctx);
        if (st != GCN_OK)
            return gcn_comm_fail(ctx, st);
    }
    *ms = now_ms() - t0;
    /* no rank writes over a send buffer another is still reading */
    GCN_TRY(gcn_comm_wait(ctx));
    return agreed;
}

static gcn_status local_barrier(gcn_ctx *ctx)
{
    GCN_TRY(publish(ctx, (slot){.coll = COLL_BARRIER}, false));
    gcn_status agreed = check_coll(ctx, ctx->comm->state);
    GCN_TRY(gcn_comm_wait(ctx));
    return agreed;
}

static void local_close(void *state, int ranks)
{
    (void)ranks;
    free(state);
}

static const gcn_comm_transport local_transport = {
    .allreduce = local_allreduce,
    .alltoallv = local_alltoallv,
    .wait_exchange = NULL,
    .barrier = local_barrier,
    .abort_rank = NULL,
    .close = local_close,
    .settle = NULL,
};

gcn_status gcn_comm_local_open(gcn_ctx *const *ctxs, int n, const gcn_comm_transport **tp,
                               void **state)
{
    GCN_TRY(gcn_comm_check_devices(ctxs, n, GCN_COMM_LOCAL));
    slot *slots = calloc((size_t)n, sizeof *slots);
    if (!slots)
        return GCN_ERROR(ctxs[0], GCN_ERR_NOMEM, "out of host memory for %d ranks", n);
    *tp = &local_transport;
    *state = slots;
    return GCN_OK;
}
