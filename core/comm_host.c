/* Host-memory collectives (comm_host.h): lengths agreed in one all-reduce,
 * bytes staged through device memory in 4-byte words and moved by the
 * transport's all-to-all exchange. */
#include <stdlib.h>
#include <string.h>

#include "comm_host.h"
#include "internal.h"

static int64_t words_of(int64_t bytes)
{
    return (bytes + 3) / 4;
}

/* Device memory of at least `words` words (one when none), with the
 * host's bytes uploaded when host is set. */
static gcn_status stage(gcn_ctx *ctx, const void *host, int64_t bytes, int64_t words,
                        float **dev)
{
    *dev = NULL;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)dev, (size_t)(words > 0 ? words : 1) * 4));
    gcn_status st = host && bytes > 0 ? ctx->be->upload(ctx, *dev, host, (size_t)bytes) : GCN_OK;
    if (st != GCN_OK) {
        gcn_mem_release(ctx, *dev, (size_t)(words > 0 ? words : 1) * 4);
        *dev = NULL;
    }
    return st;
}

static void unstage(gcn_ctx *ctx, float *dev, int64_t words)
{
    if (dev)
        gcn_mem_release(ctx, dev, (size_t)(words > 0 ? words : 1) * 4);
}

/* Offsets of an exchange, send and recv, ranks + 1 each, and the lengths
 * as doubles for their all-reduce: one allocation. */
typedef struct plan {
    int64_t *send_off, *recv_off;
    double *v;
} plan;

static gcn_status plan_alloc(gcn_ctx *ctx, plan *p)
{
    int n = gcn_ctx_ranks(ctx);
    char *m = calloc(1, (size_t)(3 * n + 2) * 8);
    if (!m)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "collective: out of host memory");
    p->send_off = (int64_t *)(void *)m;
    p->recv_off = p->send_off + n + 1;
    p->v = (double *)(void *)(p->recv_off + n + 1);
    return GCN_OK;
}

/* lens[ranks] summed over the ranks in one all-reduce (each rank gives
 * what it knows, zeros elsewhere). */
static gcn_status agree_lengths(gcn_ctx *ctx, plan *pl, int64_t *lens)
{
    int n = gcn_ctx_ranks(ctx);
    for (int p = 0; p < n; p++)
        pl->v[p] = (double)lens[p];
    double *dev = NULL;
    size_t size = (size_t)n * sizeof *pl->v;
    GCN_TRY(gcn_mem_alloc(ctx, (void **)&dev, size));
    gcn_status st = ctx->be->upload(ctx, dev, pl->v, size);
    if (st == GCN_OK)
        st = gcn_comm_allreduce_f64(ctx, dev, n);
    if (st == GCN_OK)
        st = ctx->be->download(ctx, pl->v, dev, size);
    gcn_mem_release(ctx, dev, size);
    for (int p = 0; st == GCN_OK && p < n; p++)
        lens[p] = (int64_t)pl->v[p];
    return st;
}

static gcn_status check_call(gcn_ctx *ctx, int root, const char *what)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    if (!ctx->comm)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "%s: the context is in no communicator", what);
    if (root < 0 || root >= gcn_ctx_ranks(ctx))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "%s: root %d of %d ranks", what, root,
                         gcn_ctx_ranks(ctx));
    return GCN_OK;
}

gcn_status gcn_comm_broadcast_host(gcn_ctx *ctx, void *buf, int64_t bytes, int root)
{
    GCN_TRY(check_call(ctx, root, "gcn_comm_broadcast_host"));
    GCN_ARG(ctx, bytes >= 0 && (buf || bytes == 0));
    int n = gcn_ctx_ranks(ctx), me = gcn_ctx_rank(ctx), rel = (me - root + n) % n;
    int64_t words = words_of(bytes);
    plan pl;
    float *dev = NULL;
    GCN_TRY(plan_alloc(ctx, &pl));
    gcn_status st = stage(ctx, me == root ? buf : NULL, bytes, words, &dev);
    /* a binomial tree: in the round of `step`, the ranks that have the
     * bytes (rel < step) send them to rel + step */
    for (int step = 1; step < n && st == GCN_OK; step <<= 1) {
        int to = rel < step && rel + step < n ? (rel + step + root) % n : -1;
        int from = rel >= step && rel < 2 * step ? (rel - step + root) % n : -1;
        for (int p = 0; p < n; p++) {
            pl.send_off[p + 1] = pl.send_off[p] + (p == to ? words : 0);
            pl.recv_off[p + 1] = pl.recv_off[p] + (p == from ? words : 0);
        }
        st = gcn_comm_alltoallv(ctx, dev, pl.send_off, dev, pl.recv_off);
    }
    if (st == GCN_OK && me != root && bytes > 0)
        st = ctx->be->download(ctx, buf, dev, (size_t)bytes);
    unstage(ctx, dev, words);
    free(pl.send_off);
    return st;
}

gcn_status gcn_comm_gather_host(gcn_ctx *ctx, const void *send, int64_t bytes, int root,
                                void **recv, int64_t *lens)
{
    GCN_TRY(check_call(ctx, root, "gcn_comm_gather_host"));
    GCN_ARG(ctx, bytes >= 0 && (send || bytes == 0) && recv && lens);
    int n = gcn_ctx_ranks(ctx), me = gcn_ctx_rank(ctx);
    *recv = NULL;
    memset(lens, 0, (size_t)n * sizeof *lens);
    lens[me] = bytes;
    plan pl;
    GCN_TRY(plan_alloc(ctx, &pl));
    float *out = NULL, *in = NULL;
    char *host = NULL;
    int64_t total = 0;
    gcn_status st = agree_lengths(ctx, &pl, lens);
    for (int p = 0; st == GCN_OK && p < n; p++) {
        pl.send_off[p + 1] = pl.send_off[p] + (p == root ? words_of(bytes) : 0);
        pl.recv_off[p + 1] = pl.recv_off[p] + (me == root ? words_of(lens[p]) : 0);
        total += lens[p];
    }
    if (st == GCN_OK)
        st = stage(ctx, send, bytes, words_of(bytes), &out);
    if (st == GCN_OK)
        st = stage(ctx, NULL, 0, pl.recv_off[n], &in);
    if (st == GCN_OK)
        st = gcn_comm_alltoallv(ctx, out, pl.send_off, in, pl.recv_off);
    if (st == GCN_OK && me == root && !(host = malloc((size_t)(total > 0 ? total : 1))))
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "gather: out of host memory (%lld bytes)",
                       (long long)total);
    int64_t at = 0;
    for (int p = 0; st == GCN_OK && me == root && p < n; at += lens[p], p++)
        if (lens[p] > 0)
            st = ctx->be->download(ctx, host + at, in + pl.recv_off[p], (size_t)lens[p]);
    unstage(ctx, out, words_of(bytes));
    unstage(ctx, in, pl.recv_off[n]);
    free(pl.send_off);
    if (st != GCN_OK) {
        free(host);
        return st;
    }
    *recv = host;
    return GCN_OK;
}

gcn_status gcn_comm_scatter_host(gcn_ctx *ctx, const void *send, const int64_t *lens, int root,
                                 void **recv, int64_t *recv_len)
{
    GCN_TRY(check_call(ctx, root, "gcn_comm_scatter_host"));
    int n = gcn_ctx_ranks(ctx), me = gcn_ctx_rank(ctx);
    GCN_ARG(ctx, recv && recv_len && (me != root || lens));
    *recv = NULL;
    *recv_len = 0;
    plan pl;
    GCN_TRY(plan_alloc(ctx, &pl));
    int64_t *all = calloc((size_t)n, sizeof *all);
    float *out = NULL, *in = NULL;
    char *host = NULL, *packed = NULL;
    gcn_status st = all ? GCN_OK : GCN_ERROR(ctx, GCN_ERR_NOMEM, "scatter: out of host memory");
    for (int p = 0; st == GCN_OK && me == root && p < n; p++)
        all[p] = lens[p];
    if (st == GCN_OK)
        st = agree_lengths(ctx, &pl, all);
    for (int p = 0; st == GCN_OK && p < n; p++) {
        pl.send_off[p + 1] = pl.send_off[p] + (me == root ? words_of(all[p]) : 0);
        pl.recv_off[p + 1] = pl.recv_off[p] + (p == root ? words_of(all[me]) : 0);
    }
    /* root lays each rank's bytes out from a word boundary */
    if (st == GCN_OK && me == root && !(packed = calloc((size_t)pl.send_off[n] + 1, 4)))
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "scatter: out of host memory");
    for (int64_t p = 0, at = 0; st == GCN_OK && me == root && p < n; at += all[p], p++)
        if (all[p] > 0)
            memcpy(packed + pl.send_off[p] * 4, (const char *)send + at, (size_t)all[p]);
    if (st == GCN_OK)
        st = stage(ctx, packed, pl.send_off[n] * 4, pl.send_off[n], &out);
    if (st == GCN_OK)
        st = stage(ctx, NULL, 0, pl.recv_off[n], &in);
    if (st == GCN_OK)
        st = gcn_comm_alltoallv(ctx, out, pl.send_off, in, pl.recv_off);
    if (st == GCN_OK && all[me] > 0 && !(host = malloc((size_t)all[me])))
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "scatter: out of host memory (%lld bytes)",
                       (long long)all[me]);
    if (st == GCN_OK && all[me] > 0)
        st = ctx->be->download(ctx, host, in, (size_t)all[me]);
    unstage(ctx, out, pl.send_off[n]);
    unstage(ctx, in, pl.recv_off[n]);
    free(packed);
    free(pl.send_off);
    if (st == GCN_OK) {
        *recv = host;
        *recv_len = all[me];
    } else {
        free(host);
    }
    free(all);
    return st;
}
